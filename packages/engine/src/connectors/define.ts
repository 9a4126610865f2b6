/**
 * What a connector is (D114), after Airbyte's spec / check / discover / read: its settings (secrets marked; the
 * credentials switch it on), how they are checked, the budget it spends, and the provider it builds over a
 * `ConnectorContext`. The server reads the settings from `SDGW_<PLATFORM>_*` or from `createServer({ connectors })`;
 * an operator's plug-in (issue 33) is a `ConnectorDefinition` of its own.
 */
import type { Platform } from "@sdgw/types";
import type { PlatformProvider } from "../providers/port.ts";
import type { BudgetBucket, ConnectorContext } from "./context.ts";
import { REDACTED, redactText } from "./redact.ts";

/** One setting of a connector. */
export interface ConnectorSetting {
  /** Its option name (`apiKey`): `createServer({ connectors: { youtube: { apiKey } } })`. */
  name: string;
  /** Its environment variable (`SDGW_YOUTUBE_API_KEY`). */
  env: string;
  /** What it is. */
  description: string;
  /** A secret: never shown, logged or echoed in a message (only whether it is set). */
  secret?: boolean;
  /** Setting it switches the connector on; without it the platform stays on the simulator. */
  switch?: boolean;
  /** Its default, as text. */
  default?: string;
}

/** Settings that are not what they must be; each problem names its setting as the operator wrote it. */
export class ConnectorConfigError extends Error {
  readonly problems: readonly string[];
  constructor(problems: readonly string[]) {
    super(problems.join("; "));
    this.name = "ConnectorConfigError";
    this.problems = problems;
  }
}

/**
 * Whether `e` is a refusal of settings: a {@link ConnectorConfigError}, or an error of the same name with a list of
 * `problems` (a plug-in that imports nothing of the gateway at run time throws its own, D158).
 */
export function isConnectorConfigError(e: unknown): e is ConnectorConfigError {
  return (
    e instanceof ConnectorConfigError ||
    (e instanceof Error &&
      e.name === "ConnectorConfigError" &&
      Array.isArray((e as { problems?: unknown }).problems) &&
      (e as unknown as { problems: unknown[] }).problems.every((p) => typeof p === "string"))
  );
}

/** Raw settings by option name, as text (the environment's values, or an options object's). */
export type RawSettings = Readonly<Record<string, string | undefined>>;

/** A connector to one platform's API. `S` is its checked settings. */
export interface ConnectorDefinition<S = unknown> {
  platform: Platform;
  /** The API it reads (`YouTube Data API v3`). */
  api: string;
  settings: readonly ConnectorSetting[];
  /**
   * Checks raw settings; throws a {@link ConnectorConfigError} naming every setting at fault with `label(name)` (the
   * variable or option the operator wrote) and never a secret's value.
   */
  configure(raw: RawSettings, label: (name: string) => string): S;
  /** The buckets of its daily upstream budget (D121). */
  budget(settings: S): readonly BudgetBucket[];
  /** The secret values of its settings: kept out of every log, error, recording and answer. */
  secrets(settings: S): readonly string[];
  /** Query parameters that change from one run to the next (a time computed from now): dropped from recordings (D123). */
  volatileParams?: readonly string[];
  /** Where it reads, for the banner (never a secret). */
  describe(settings: S): string;
  /** Builds the live provider. */
  create(settings: S, ctx: ConnectorContext): PlatformProvider;
}

/** Whether the raw settings switch the connector on (its credentials are set). */
export function switchedOn(def: Pick<ConnectorDefinition, "settings">, raw: RawSettings): boolean {
  return def.settings.some((s) => s.switch && raw[s.name] !== undefined && raw[s.name] !== "");
}

/** Collects problems while settings are read, then throws them all at once. */
export class SettingsReader {
  readonly problems: string[] = [];
  private readonly raw: RawSettings;
  private readonly label: (name: string) => string;
  private readonly defs: readonly ConnectorSetting[];

  /**
   * A reader of `raw` against the connector's `defs`; `label` names a setting as the operator wrote it (its variable
   * or option). A setting the connector does not have is a problem at once.
   */
  constructor(defs: readonly ConnectorSetting[], raw: RawSettings, label: (name: string) => string) {
    this.defs = defs;
    this.raw = raw;
    this.label = label;
    for (const name of Object.keys(raw))
      if (!defs.some((d) => d.name === name))
        this.problems.push(`${label(name)} is not a setting of this connector (${defs.map((d) => d.name).join(", ")})`);
  }

  /** The text of a setting (its default when unset or empty). */
  text(name: string): string | undefined {
    const v = this.raw[name];
    return v !== undefined && v !== "" ? v : this.defs.find((d) => d.name === name)?.default;
  }

  /** A required secret: 1 to 512 visible ASCII characters; a message says what is wrong without showing it. */
  secret(name: string, what: string): string {
    const v = this.text(name);
    if (v === undefined) {
      this.problems.push(`${this.label(name)} is required: ${what}`);
      return "";
    }
    if (!/^[!-~]{1,512}$/.test(v))
      this.problems.push(
        `${this.label(name)} must be ${what}, 1 to 512 visible ASCII characters without spaces ` +
          `(got ${v.length} characters${/\s/.test(v) ? " with a space or line break" : ""}; the value is not shown)`,
      );
    return v;
  }

  /** An https URL, or http to this machine (127.0.0.1, ::1, localhost), without credentials, query or fragment. */
  baseUrl(name: string): string {
    const v = this.text(name) ?? "";
    let u: URL | null = null;
    try {
      u = new URL(v);
    } catch {
      u = null;
    }
    const loopback = u !== null && ["127.0.0.1", "[::1]", "localhost"].includes(u.hostname);
    if (
      !u ||
      !(u.protocol === "https:" || (u.protocol === "http:" && loopback)) ||
      u.username !== "" ||
      u.password !== "" ||
      u.search !== "" ||
      u.hash !== ""
    ) {
      this.problems.push(
        `${this.label(name)} must be an https:// URL (or http:// to 127.0.0.1, ::1 or localhost, ` +
          `for a fake upstream) without user, password, query or fragment ` +
          `(got ${JSON.stringify(u ? `${u.protocol}//${u.host}${u.pathname}` : v.slice(0, 80))})`,
      );
      return v;
    }
    return u.href.replace(/\/+$/, "");
  }

  /** A whole number in [min, max]. */
  whole(name: string, what: string, min: number, max: number): number {
    const v = this.text(name);
    const n = v !== undefined && /^\s*\d+\s*$/.test(v) ? Number(v) : Number.NaN;
    if (!Number.isSafeInteger(n) || n < min || n > max) {
      this.problems.push(
        `${this.label(name)} must be ${what}, a whole number from ${min} to ${max} (got ${JSON.stringify(v)})`,
      );
      return min;
    }
    return n;
  }

  /** Text matching `pattern`. */
  matching(name: string, what: string, pattern: RegExp): string {
    const v = this.text(name) ?? "";
    if (!pattern.test(v))
      this.problems.push(`${this.label(name)} must be ${what} (got ${JSON.stringify(v.slice(0, 80))})`);
    return v;
  }

  /**
   * Throws every problem found, if any, with the value of every secret setting, and any credential in a URL's query,
   * replaced by `REDACTED` (an operator who pasted the key into the wrong variable does not see it echoed).
   */
  done(): void {
    if (!this.problems.length) return;
    const secrets = this.defs.flatMap((d) => (d.secret && this.raw[d.name] ? [this.raw[d.name]!] : []));
    throw new ConnectorConfigError(
      this.problems.map((p) =>
        redactText(p, secrets).replace(/([?&](?:key|api_key|apikey|access_token|token)=)[^&#\s"]*/gi, `$1${REDACTED}`),
      ),
    );
  }
}
