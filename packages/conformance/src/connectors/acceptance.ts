/**
 * The connector acceptance suite (D114), after Airbyte's connector acceptance tests: any connector — ours or an
 * operator's — run against a fake upstream on 127.0.0.1 through the engine's own planning and answers, as the
 * server runs it. Its settings refuse bad values with a message naming the setting and never the secret; every
 * operation answers an envelope that validates with `@sdgw/validators`; paging reaches page 2 with the right
 * upstream token; foreign and garbled cursors are refused before anything is sent; every link form reads its id; each
 * upstream fault answers its error and is never charged; two identical reads give the same items; secrets never
 * appear in logs or answers; no request went to the upstream unanswered.
 */
import {
  Catalog,
  ROUTES,
  Simulator,
  entryOf,
  finishedAnswer,
  isoSeconds,
  planRoute,
  refusalAnswer,
  type EndedCall,
  type PlatformProvider,
  type ProviderOutcome,
  type RouteOperation,
} from "@sdgw/engine";
import {
  isConnectorConfigError,
  MemoryBudget,
  MemoryCache,
  MemoryShared,
  type ConnectorContext,
  type ConnectorDefinition,
  type RawSettings,
  type UpstreamExchange,
} from "@sdgw/engine/connectors";
import type { Platform } from "@sdgw/types";
import { DEFAULT_URLS, bodyProblem, validateDataEnvelope, validateTargetsAnswer } from "@sdgw/validators";
import { startFakeUpstream, type FakeUpstream } from "./fake-upstream.ts";

type Body = Record<string, unknown>;
/** The operations that read one target. */
export type TargetOperation = "detail" | "comments" | "user_profile" | "user_posts";

/** A fault to inject and the answer it must give (never charged). */
export interface ConnectorFault {
  /** What it is (`quota exceeded`, `5xx`). */
  name: string;
  operation: RouteOperation;
  /** The route's body without `platform`. */
  body: Body;
  /** Makes the fault happen (an override of the fake upstream, a knob of the simulator); may return an undo. */
  // biome-ignore lint/suspicious/noConfusingVoidType: void lets an inject that returns nothing, such as `(u) => u!.override(…)`, be given
  inject(upstream: FakeUpstream | null): void | (() => void);
  /** The envelope status and error code it must answer, and whether `retryable` (for `upstream_error`). */
  expect: { status: "error" | "timeout"; code?: string; retryable?: boolean };
  /** How long the call may take (a hanging upstream needs the call's own timeout), default the suite's. */
  timeoutMs?: number;
}

/** Settings a connector must refuse. */
export interface BadSettings {
  /** What is wrong with them (`no key`). */
  why: string;
  /** The settings, given the fake upstream's URL. */
  settings: (upstreamUrl: string) => RawSettings;
  /** The setting the refusal's message must name (`apiKey`). */
  names: string;
}

/** What the suite is told about the connector under test. */
export interface ConnectorSubject {
  /** Its name in the report (`youtube (live)`). */
  name: string;
  platform: Platform;
  /** The exchanges the fake upstream answers (one hand-written answer per upstream request). */
  exchanges?: readonly UpstreamExchange[];
  /** The connector (built from settings); or `provider` for one without settings, such as the simulator. */
  connector?: ConnectorDefinition;
  /** Settings that work against the fake upstream at `upstreamUrl`. */
  settings?: (upstreamUrl: string) => RawSettings;
  /** Settings that must be refused, and the setting the refusal must name. */
  badSettings?: readonly BadSettings[];
  /** A provider without settings (the simulator's). */
  provider?: () => PlatformProvider;
  /** One call of each operation that answers `ok` (the route's body without `platform`). */
  calls: Partial<Record<RouteOperation, Body>>;
  /**
   * Operations this connector does not offer (D120, D156): each must be refused before anything runs, `400
   * not_supported` with reason `not_available_yet`, nothing sent upstream and nothing charged — never answered with
   * simulated data.
   */
  unavailable?: readonly RouteOperation[];
  /**
   * Calls whose first page has more; `upstreamToken` is what page 2 must send upstream; `otherBody` the same call
   * with other parameters, which the first page's cursor must not continue (default: `query` changed).
   */
  paging: readonly { operation: RouteOperation; body: Body; upstreamToken?: string; otherBody?: Body }[];
  /** Links and the id each names (`detail` and `user_profile`: the item's id). */
  urlForms: readonly { operation: "detail" | "user_profile"; url: string; id: string }[];
  /** A link of another site, which must answer `invalid_target` naming `url`. */
  notALink?: { operation: TargetOperation; url: string };
  faults: readonly ConnectorFault[];
}

/** One check's verdict. */
export interface ConnectorCheckResult {
  id: string;
  title: string;
  outcome: "passed" | "failed" | "not_applicable";
  message: string;
}

/** The whole run. */
export interface ConnectorReport {
  subject: string;
  results: ConnectorCheckResult[];
  passed: number;
  failed: number;
  notApplicable: number;
}

/** Options of a run. */
export interface ConnectorAcceptanceOptions {
  /** How long one call may take before it is a `timeout` (default 10 000 ms). */
  callTimeoutMs?: number;
}

/** What a call answered: the plan's refusal, or the answer (and its ended calls). */
type Ran =
  | { refused: { code: string; param?: string; reason?: string; message: string } }
  | { answer: Record<string, unknown>; ended: EndedCall[]; problems: string[] };

class Fail extends Error {}
const fail = (message: string): never => {
  throw new Fail(message);
};
const na = (message: string) => ({ outcome: "not_applicable" as const, message });

/** Runs the acceptance suite on one connector; resolves to the report (it never throws for a failed check). */
export async function runConnectorAcceptance(
  subject: ConnectorSubject,
  options: ConnectorAcceptanceOptions = {},
): Promise<ConnectorReport> {
  const callTimeoutMs = options.callTimeoutMs ?? 10_000;
  const upstream = subject.connector ? await startFakeUpstream({ exchanges: subject.exchanges ?? [] }) : null;
  const logs: string[] = [];
  const answers: string[] = [];
  const settings = subject.connector && subject.settings ? subject.settings(upstream!.url) : undefined;
  const secrets: string[] = [];

  /** A new provider (its own budget and cache) and a catalog with it in its platform's place. */
  const fresh = (): { provider: PlatformProvider; catalog: Catalog } => {
    let provider: PlatformProvider;
    if (subject.connector) {
      const def = subject.connector;
      const s = def.configure(settings ?? {}, (n) => n);
      secrets.push(...def.secrets(s));
      const ctx: ConnectorContext = {
        fetch: globalThis.fetch.bind(globalThis),
        budget: new MemoryBudget({ buckets: { [subject.platform]: def.budget(s) }, now: Date.now }),
        cache: new MemoryCache({ now: Date.now }),
        shared: new MemoryShared({ now: Date.now }),
        now: Date.now,
        log: { info: (m) => logs.push(m), error: (m) => logs.push(m) },
      };
      provider = def.create(s, ctx);
    } else if (subject.provider) provider = subject.provider();
    else throw new TypeError("a ConnectorSubject needs a connector (with settings) or a provider");
    const providers = { ...new Simulator().providers, [subject.platform]: provider } as Record<
      Platform,
      PlatformProvider
    >;
    return { provider, catalog: new Catalog(providers) };
  };

  /** One request of a typed route, planned and answered as the server does. */
  const run = async (
    catalog: Catalog,
    provider: PlatformProvider,
    op: RouteOperation,
    body: Body,
    timeoutMs = callTimeoutMs,
  ): Promise<Ran> => {
    const operationId = ROUTES[op].operationId;
    const full = { platform: subject.platform, ...body };
    const invalid = bodyProblem(operationId, full);
    if (invalid) return { refused: { code: "invalid_params", param: invalid.param, message: invalid.message } };
    const planned = planRoute(catalog, operationId as never, full, "", bodyProblem);
    if (!planned.ok) {
      const r = refusalAnswer(planned.refusal, DEFAULT_URLS);
      return {
        refused:
          r.code === "invalid_params"
            ? { code: r.code, param: r.invalid.param, message: r.invalid.message }
            : { code: r.code, reason: r.extra.reason, message: r.extra.message },
      };
    }
    const plan = planned.plan;
    const ended = await Promise.all(
      plan.calls.map(async (call) => {
        if (call.unsupported)
          return entryOf(call, { status: "not_supported", message: call.unsupported }, plan.errorScope, DEFAULT_URLS);
        const controller = new AbortController();
        const timer = setTimeout(() => controller.abort(new Error("timeout")), timeoutMs);
        let outcome: ProviderOutcome;
        try {
          outcome = await Promise.race([
            provider.call({
              platform: call.platform,
              operation: call.operation,
              params: call.params,
              signal: controller.signal,
              deadline: Date.now() + timeoutMs,
            }),
            new Promise<never>((_, reject) =>
              controller.signal.addEventListener("abort", () => reject(new Fail("timeout")), { once: true }),
            ),
          ]);
        } catch (e) {
          if (!(e instanceof Fail)) throw e;
          outcome = { status: "timeout", message: `${call.platform} did not answer in time. Nothing was charged.` };
        } finally {
          clearTimeout(timer);
        }
        return entryOf(call, outcome, plan.errorScope, DEFAULT_URLS);
      }),
    );
    const charged = ended.reduce((sum, e) => sum + e.cost, 0);
    const { body: answer } = finishedAnswer(plan, ended, "req_acceptance", isoSeconds(Date.now()), charged, 1000);
    answers.push(JSON.stringify(answer));
    const checked = plan.shape === "targets" ? validateTargetsAnswer(answer) : validateDataEnvelope(answer);
    const problems = checked.ok ? [] : checked.errors.map((e) => `${e.path || "/"} ${e.message}`);
    return { answer, ended, problems };
  };

  const answered = (r: Ran, what: string): { answer: Record<string, unknown>; ended: EndedCall[] } => {
    if ("refused" in r)
      return fail(
        `${what}: refused before running, ${r.refused.code}${r.refused.param ? ` (${r.refused.param})` : ""}: ${r.refused.message}`,
      );
    if (r.problems.length)
      return fail(`${what}: the answer does not validate with @sdgw/validators: ${r.problems.slice(0, 3).join("; ")}`);
    return r;
  };
  const itemsOf = (a: Record<string, unknown>) => (a["items"] as Record<string, unknown>[] | undefined) ?? [];
  const describeAnswer = (a: Record<string, unknown>) => {
    const e = a["error"] as { code?: string; message?: string } | undefined;
    return `status ${String(a["status"])}${e ? ` ${e.code}: ${e.message}` : ""}`;
  };
  const refusedCursor = (r: Ran, what: string) => {
    if (!("refused" in r) || r.refused.code !== "invalid_params" || r.refused.param !== "cursor")
      fail(
        `${what}: expected 400 invalid_params naming cursor, got ${"refused" in r ? `${r.refused.code} (${r.refused.param})` : describeAnswer(r.answer)}`,
      );
  };

  type Check = { id: string; title: string; run(): Promise<string | ReturnType<typeof na>> };
  const checks: Check[] = [];
  const add = (id: string, title: string, body: () => Promise<string | ReturnType<typeof na>>) =>
    checks.push({ id, title, run: body });

  add(
    "config.bad-settings",
    "bad settings are refused with a message naming the setting, never the secret",
    async () => {
      if (!subject.connector) return na("no settings: this provider is built without any");
      if (!subject.badSettings?.length)
        return fail("no badSettings given: a connector must show that it refuses bad settings");
      for (const bad of subject.badSettings) {
        const raw = bad.settings(upstream!.url);
        try {
          subject.connector.configure(raw, (n) => n);
          fail(`${bad.why}: accepted`);
        } catch (e) {
          if (e instanceof Fail) throw e;
          if (!isConnectorConfigError(e)) fail(`${bad.why}: threw ${String(e)}, not a ConnectorConfigError`);
          const message = (e as Error).message;
          if (!message.includes(bad.names)) fail(`${bad.why}: the message does not name ${bad.names}: ${message}`);
          for (const s of subject.connector.settings)
            if (s.secret && raw[s.name] && raw[s.name]!.length >= 4 && message.includes(raw[s.name]!))
              fail(`${bad.why}: the message shows the secret ${s.name}`);
        }
      }
      return `${subject.badSettings.length} bad settings refused, each naming its setting`;
    },
  );

  add("config.source", "the provider says where its data comes from, and a connector is not simulated", async () => {
    const { provider, catalog } = fresh();
    const listed = catalog.platforms.find((p) => p.platform === subject.platform)?.source;
    if (subject.connector && (provider.source === undefined || provider.source === "simulated"))
      fail(`a connector's provider must say source live or plugged, not ${provider.source ?? "nothing"}`);
    return `source ${listed}`;
  });

  for (const op of Object.keys(ROUTES) as RouteOperation[]) {
    if (subject.unavailable?.includes(op)) {
      add(`read.${op}`, `${op} is not offered: not_supported, not_available_yet, nothing sent`, async () => {
        const { provider, catalog } = fresh();
        const before = upstream?.requests.length ?? 0;
        const r = await run(catalog, provider, op, subject.calls[op] ?? {});
        if (!("refused" in r) || r.refused.code !== "not_supported" || r.refused.reason !== "not_available_yet")
          fail(
            `${op}: expected 400 not_supported, reason not_available_yet, ` +
              `got ${"refused" in r ? `${r.refused.code} (${r.refused.reason})` : describeAnswer(r.answer)}`,
          );
        if ((upstream?.requests.length ?? 0) !== before) fail(`${op}: a request went upstream`);
        return `refused before running: ${(r as { refused: { message: string } }).refused.message.slice(0, 80)}…`;
      });
      continue;
    }
    add(`read.${op}`, `${op} answers ok, charged its price, and validates`, async () => {
      const body = subject.calls[op];
      if (!body) return fail(`no call of ${op} given: every operation the platform offers must be read`);
      const { provider, catalog } = fresh();
      const { answer, ended } = answered(await run(catalog, provider, op, body), op);
      if (answer["status"] !== "ok") fail(`${op}: ${describeAnswer(answer)}`);
      const price = ended[0]!.call.price;
      if ((answer["billing"] as { cost: number }).cost !== price)
        fail(`${op}: charged ${(answer["billing"] as { cost: number }).cost}, its price is ${price}`);
      return `${itemsOf(answer).length} item(s), ${price} credit(s); upstream cost quoted ${ended[0]!.call.upstreamCost}`;
    });
  }

  add("paging.page-2", "paging reaches page 2 with the right upstream token", async () => {
    if (!subject.paging.length) return fail("no paging calls given");
    const lines: string[] = [];
    for (const p of subject.paging) {
      const { provider, catalog } = fresh();
      const first = answered(await run(catalog, provider, p.operation, p.body), `${p.operation} page 1`).answer;
      const page = first["page"] as { has_more?: boolean; cursor?: string } | undefined;
      if (!page?.has_more || !page.cursor)
        fail(`${p.operation} page 1: no page.cursor with has_more (${describeAnswer(first)})`);
      const before = upstream?.requests.length ?? 0;
      const second = answered(
        await run(catalog, provider, p.operation, { ...p.body, cursor: page!.cursor }),
        `${p.operation} page 2`,
      ).answer;
      if (second["status"] !== "ok") fail(`${p.operation} page 2: ${describeAnswer(second)}`);
      const ids = (a: Record<string, unknown>) => itemsOf(a).map((i) => String(i["id"] ?? i["rank"]));
      if (ids(second).some((id) => ids(first).includes(id))) fail(`${p.operation}: page 2 repeats items of page 1`);
      if (p.upstreamToken !== undefined) {
        const sent = upstream!.requests.slice(before).some((r) => Object.values(r.query).includes(p.upstreamToken!));
        if (!sent) fail(`${p.operation} page 2: no upstream request carried the page token ${p.upstreamToken}`);
      }
      lines.push(`${p.operation}: ${ids(first).length} + ${ids(second).length} items`);
    }
    return lines.join("; ");
  });

  add(
    "cursors.foreign",
    "a cursor of another platform, operation or query is refused (invalid_params naming cursor)",
    async () => {
      const p = subject.paging[0];
      if (!p) return fail("no paging calls given");
      const { provider, catalog } = fresh();
      const first = answered(await run(catalog, provider, p.operation, p.body), `${p.operation} page 1`).answer;
      const cursor = (first["page"] as { cursor?: string } | undefined)?.cursor;
      if (!cursor) return fail(`${p.operation} page 1 has no cursor`);
      const before = upstream?.requests.length ?? 0;
      // Another platform's cursor: the simulator's own first page of a search on a platform that is not this one.
      const other: Platform = subject.platform === "x" ? "reddit" : "x";
      const sim = new Simulator();
      const planned = planRoute(
        new Catalog(sim.providers),
        "searchPost",
        { platform: other, query: "acceptance" },
        "",
        bodyProblem,
      );
      const signal = new AbortController().signal;
      const o = planned.ok
        ? await sim.providers[other].call({
            platform: other,
            operation: "search",
            params: planned.plan.calls[0]!.params,
            signal,
          })
        : undefined;
      const otherCursor = o?.status === "ok" ? o.page?.cursor : undefined;
      if (!otherCursor) fail(`the simulator gave no ${other} cursor to try`);
      refusedCursor(await run(catalog, provider, p.operation, { ...p.body, cursor: otherCursor }), `${other}'s cursor`);
      const otherOp = (["search", "trending", "comments", "user_posts"] as const).find(
        (op) => op !== p.operation && subject.calls[op],
      );
      if (otherOp)
        refusedCursor(
          await run(catalog, provider, otherOp, { ...subject.calls[otherOp], cursor }),
          `${p.operation}'s cursor sent to ${otherOp}`,
        );
      let bound = "";
      if (subject.connector) {
        const changed =
          p.otherBody ??
          (typeof p.body["query"] === "string" ? { ...p.body, query: `${p.body["query"]} other` } : undefined);
        if (!changed)
          fail(
            `${p.operation}: give otherBody (the same call with other parameters) to check that its cursor is bound to them`,
          );
        refusedCursor(
          await run(catalog, provider, p.operation, { ...changed, cursor }),
          `${p.operation}'s cursor with other parameters`,
        );
        bound = ", and with other parameters";
      }
      if ((upstream?.requests.length ?? 0) !== before) fail("a refused cursor still sent a request upstream");
      return `refused: another platform's cursor${otherOp ? `, another operation's` : ""}${bound}; nothing sent upstream`;
    },
  );

  add("cursors.garbled", "a garbled cursor is refused before anything is sent", async () => {
    const p = subject.paging[0];
    if (!p) return fail("no paging calls given");
    const { provider, catalog } = fresh();
    const first = answered(await run(catalog, provider, p.operation, p.body), `${p.operation} page 1`).answer;
    const cursor = (first["page"] as { cursor?: string } | undefined)?.cursor ?? "e30";
    const before = upstream?.requests.length ?? 0;
    const flip = (c: string, i: number) => c.slice(0, i) + (c[i] === "A" ? "B" : "A") + c.slice(i + 1);
    const garbled = [
      "%%%",
      "e30",
      "null",
      cursor.slice(0, Math.floor(cursor.length / 2)),
      flip(cursor, Math.floor(cursor.length / 3)),
      `${cursor}x`,
      "A".repeat(20_000),
    ];
    for (const g of garbled)
      refusedCursor(
        await run(catalog, provider, p.operation, { ...p.body, cursor: g }),
        `cursor ${JSON.stringify(g.slice(0, 24))}`,
      );
    if ((upstream?.requests.length ?? 0) !== before) fail("a garbled cursor still sent a request upstream");
    return `${garbled.length} garbled cursors refused; nothing sent upstream`;
  });

  add("targets.url-forms", "every link form reads the object whose id it names", async () => {
    if (!subject.urlForms.length) return fail("no link forms given");
    const { provider, catalog } = fresh();
    for (const u of subject.urlForms) {
      const { answer } = answered(await run(catalog, provider, u.operation, { url: u.url }), u.url);
      if (answer["status"] !== "ok") fail(`${u.url}: ${describeAnswer(answer)}`);
      const id = itemsOf(answer)[0]?.["id"];
      if (id !== u.id) fail(`${u.url}: read ${String(id)}, the link names ${u.id}`);
    }
    if (subject.notALink) {
      const { answer, ended } = answered(
        await run(catalog, provider, subject.notALink.operation, { url: subject.notALink.url }),
        subject.notALink.url,
      );
      const e = answer["error"] as { code?: string; fix?: { param?: string } } | undefined;
      if (e?.code !== "invalid_target" || e.fix?.param !== "url")
        fail(`${subject.notALink.url}: expected invalid_target naming url, got ${describeAnswer(answer)}`);
      if (ended[0]!.cost !== 0) fail("a link that names nothing was charged");
    }
    return `${subject.urlForms.length} link forms${subject.notALink ? ", and a link of another site refused (invalid_target, url)" : ""}`;
  });

  for (const f of subject.faults) {
    add(
      `faults.${f.name.replace(/[^a-z0-9]+/gi, "-").toLowerCase()}`,
      `${f.name} answers ${f.expect.code ?? f.expect.status}, not charged`,
      async () => {
        const { provider, catalog } = fresh();
        const undo = f.inject(upstream);
        try {
          const { answer, ended } = answered(await run(catalog, provider, f.operation, f.body, f.timeoutMs), f.name);
          const e = answer["error"] as { code?: string; retryable?: boolean } | undefined;
          if (answer["status"] !== f.expect.status || (f.expect.code && e?.code !== f.expect.code))
            fail(
              `expected ${f.expect.status}${f.expect.code ? ` ${f.expect.code}` : ""}, got ${describeAnswer(answer)}`,
            );
          if (f.expect.retryable !== undefined && e?.retryable !== f.expect.retryable)
            fail(`expected retryable ${f.expect.retryable}, got ${String(e?.retryable)}`);
          if (ended.some((x) => x.cost !== 0) || (answer["billing"] as { cost: number }).cost !== 0)
            fail("a failed call was charged");
          return `${describeAnswer(answer)}; cost 0`;
        } finally {
          if (typeof undo === "function") undo();
          upstream?.reset();
        }
      },
    );
  }

  add("reads.repeatable", "two identical reads give the same items", async () => {
    const { provider, catalog } = fresh();
    const lines: string[] = [];
    for (const [op, body] of Object.entries(subject.calls) as [RouteOperation, Body][]) {
      if (subject.unavailable?.includes(op)) continue;
      const a = answered(await run(catalog, provider, op, body), `${op} (1)`).answer;
      const b = answered(await run(catalog, provider, op, body), `${op} (2)`).answer;
      if (JSON.stringify(itemsOf(a)) !== JSON.stringify(itemsOf(b))) fail(`${op}: the second read gave other items`);
      lines.push(op);
    }
    return `same items twice: ${lines.join(", ")}`;
  });

  add("secrets.not-shown", "no secret appears in a log line or an answer", async () => {
    if (!subject.connector) return na("no secrets: this provider has no settings");
    const found = [...logs, ...answers].find((text) => secrets.some((s) => s.length >= 4 && text.includes(s)));
    if (found) fail(`a secret appears in: ${found.slice(0, 120)}…`);
    return `${logs.length} log line(s) and ${answers.length} answer(s) without a secret`;
  });

  add("upstream.all-answered", "every request the connector sent was one the fake upstream knows", async () => {
    if (!upstream) return na("no upstream: this provider reads none");
    if (upstream.unmatched.length)
      fail(`requests no exchange answers: ${upstream.unmatched.map((r) => r.line).join("; ")}`);
    return "no unmatched request";
  });

  const results: ConnectorCheckResult[] = [];
  try {
    for (const c of checks) {
      try {
        const v = await c.run();
        results.push(
          typeof v === "string"
            ? { id: c.id, title: c.title, outcome: "passed", message: v }
            : { id: c.id, title: c.title, ...v },
        );
      } catch (e) {
        results.push({
          id: c.id,
          title: c.title,
          outcome: "failed",
          message: e instanceof Error ? e.message : String(e),
        });
      }
    }
  } finally {
    await upstream?.close();
  }
  return {
    subject: subject.name,
    results,
    passed: results.filter((r) => r.outcome === "passed").length,
    failed: results.filter((r) => r.outcome === "failed").length,
    notApplicable: results.filter((r) => r.outcome === "not_applicable").length,
  };
}

/** The report as text: one line per check, then the counts. */
export function formatConnectorReport(report: ConnectorReport): string {
  const mark = { passed: "✓", failed: "✗", not_applicable: "–" } as const;
  return [
    `Connector acceptance: ${report.subject}`,
    ...report.results.map((r) => `${mark[r.outcome]} ${r.id}: ${r.title} — ${r.message}`),
    `${report.passed} passed, ${report.failed} failed, ${report.notApplicable} not applicable`,
  ].join("\n");
}
