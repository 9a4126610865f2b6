/**
 * `sdgw-admin`: accounts, credits and keys of a reference server's database.
 *
 *   sdgw-admin create-account --name "Acme" [--plan free|paid] [--daily-limit N]
 *   sdgw-admin grant --account acc_… --credits 1000
 *   sdgw-admin create-key --account acc_… [--name laptop] [--daily-limit N] [--expires 2027-01-01T00:00:00Z] [--no-read-data]
 *   sdgw-admin revoke-key --key key_…|sdgw_abc1234
 *   sdgw-admin list-keys [--account acc_…]
 *   sdgw-admin suspend|resume --account acc_… | --key key_…|sdgw_abc1234
 *   sdgw-admin pause --message TEXT | unpause
 *   sdgw-admin call-cap --account acc_… --calls N|off
 *   sdgw-admin create-user --account acc_… --email a@b.c [--password-stdin]
 *   sdgw-admin disable-user --email a@b.c
 *   sdgw-admin conformance-keys [--credits N] [--name NAME]
 *
 * Options: --db PATH (default $SDGW_DB or ./data/sdgw.sqlite). Prints JSON.
 *
 * Console users (D82): a password is never taken from the command line (it would show in `ps` and the shell's
 * history). `--password-stdin` reads it from standard input (one trailing line break dropped); without it a random
 * password is made and printed once. Only its scrypt hash is stored. `disable-user` ends the user's sessions.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { createGateway } from "./storage/sqlite/gateway.ts";
import { PASSWORD_MAX, PASSWORD_MIN, hashPasswordSync, newPassword } from "./storage/sessions.ts";
import { isPostgresUrl, withoutPassword } from "./config.ts";
import type { GatewayPorts } from "./storage/port.ts";

/** What `sdgw-admin --help` prints. */
export const ADMIN_USAGE = `Usage: sdgw-admin <command> [options]   (prints JSON)

  create-account --name NAME [--plan free|paid] [--daily-limit N]
  grant --account acc_… --credits N
  create-key --account acc_… [--name NAME] [--daily-limit N] [--expires 2027-01-01T00:00:00Z] [--no-read-data]
  revoke-key --key key_…|sdgw_abc1234
  list-keys [--account acc_…]
  suspend --account acc_… | --key key_…|sdgw_abc1234     (calls answer 401 unauthorized, reason suspended)
  resume --account acc_… | --key key_…|sdgw_abc1234
  pause --message "Maintenance until 14:00 UTC"    (charged calls answer 503 temporarily_unavailable, reason paused)
  unpause
  call-cap --account acc_… --calls N|off     (calls started per UTC day; over it: 503 temporarily_unavailable, reason daily_cap)
  create-user --account acc_… --email a@b.c [--password-stdin]
                                            (a console user; without --password-stdin a password is made and printed once)
  disable-user --email a@b.c                (it cannot sign in; its sessions end)
  conformance-keys [--credits N] [--name NAME]
                                            (keys of their own for sdgw-conformance --keys-command: a new account with
                                            N credits (default 500), its key, a second key, a key without read_data, a
                                            key with daily limit 0, and a key of a second account with 0 credits)

Options: --db PATH   the server's database (default $SDGW_DB, else ./data/sdgw.sqlite)
         --database-url postgres://…   the shared PostgreSQL database instead (default $SDGW_DATABASE_URL, D108)
         --help      this text`;

const COMMANDS = [
  "create-account",
  "grant",
  "create-key",
  "revoke-key",
  "list-keys",
  "suspend",
  "resume",
  "pause",
  "unpause",
  "call-cap",
  "create-user",
  "disable-user",
  "conformance-keys",
] as const;

/** The default credits of `conformance-keys`: a run of the suite spends about 60 to 100 (its README). */
export const CONFORMANCE_CREDITS = 500;

/**
 * What `sdgw-admin conformance-keys` prints: the keys of `sdgw-conformance --keys-command` (the shape of
 * `ConformanceKeys` of @sdgw/conformance), every one of accounts made for the run, none of anyone else's.
 */
export interface ConformanceKeysOutput {
  /** A key with read_data of a new paid account holding the credits. */
  key: string;
  /** Another key of that account. */
  secondKey: string;
  /** A key of that account without read_data. */
  noscopeKey: string;
  /** A key of a second new account with 0 credits. */
  insufficientBalanceKey: string;
  /** A key of the first account with a daily limit of 0. */
  dailyLimitKey: string;
}

/** Whether these arguments ask for the usage text (`--help`, `-h`, `help`). */
export function wantsAdminHelp(argv: readonly string[]): boolean {
  return argv[0] === "help" || argv.includes("--help") || argv.includes("-h");
}

/** Where a command reads what is not in its arguments: `readStdin` gives all of standard input (`--password-stdin`). */
export interface AdminIo {
  readStdin?: () => string;
}

/**
 * Runs one admin command; returns what it prints. Throws with a message a person can act on. `io.readStdin` is
 * where `--password-stdin` reads (default: the process's standard input).
 */
export async function runAdmin(
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
  io: AdminIo = {},
): Promise<unknown> {
  const [command, ...rest] = argv;
  // Checked before the database is opened, so that a typo creates no database file.
  if (!COMMANDS.includes(command as (typeof COMMANDS)[number])) {
    throw new Error(`unknown command ${command ?? "(none)"}; commands: ${COMMANDS.join(", ")} (sdgw-admin --help)`);
  }
  if (rest.some((a) => a === "--password" || a.startsWith("--password="))) {
    throw new Error(
      "a password is never taken from the command line (ps and shell history show it): pipe it to --password-stdin, or leave it out to have one made",
    );
  }
  const { values } = parseArgs({
    args: [...rest],
    options: {
      db: { type: "string" },
      "database-url": { type: "string" },
      name: { type: "string" },
      plan: { type: "string" },
      account: { type: "string" },
      credits: { type: "string" },
      key: { type: "string" },
      "daily-limit": { type: "string" },
      expires: { type: "string" },
      "no-read-data": { type: "boolean" },
      message: { type: "string" },
      calls: { type: "string" },
      email: { type: "string" },
      "password-stdin": { type: "boolean" },
    },
    strict: true,
  });
  const gw = await openAdmin(values["database-url"] ?? env["SDGW_DATABASE_URL"], values.db ?? env["SDGW_DB"]);
  const whole = (v: string | undefined, what: string): number | null => {
    if (v === undefined) return null;
    if (!/^\d+$/.test(v)) throw new Error(`${what} must be a whole number`);
    return Number(v);
  };
  const need = (v: string | undefined, what: string): string => {
    if (!v) throw new Error(`--${what} is required`);
    return v;
  };
  try {
    switch (command) {
      case "create-account": {
        const plan = values.plan ?? "paid";
        if (plan !== "free" && plan !== "paid") throw new Error("--plan is free or paid");
        const { account, workspace } = await gw.accounts.createAccount({
          name: need(values.name, "name"),
          plan,
          dailyLimit: whole(values["daily-limit"], "--daily-limit"),
        });
        return { account: account.id, workspace: workspace.id, plan: account.plan };
      }
      case "grant": {
        const account = need(values.account, "account");
        const credits = whole(need(values.credits, "credits"), "--credits")!;
        return { account, balance: await gw.accounts.grant(account, credits, "admin grant") };
      }
      case "create-key": {
        const account = need(values.account, "account");
        if (!(await gw.accounts.account(account))) throw new Error(`no account ${account}`);
        const key = await gw.accounts.createKey({
          accountId: account,
          name: values.name ?? "default",
          permissions: values["no-read-data"] ? [] : ["read_data"],
          dailyLimit: whole(values["daily-limit"], "--daily-limit"),
          expiresAt: values.expires ?? null,
        });
        return {
          key: key.id,
          prefix: key.prefix,
          secret: key.secret,
          note: "The secret is shown once; only its hash is stored.",
        };
      }
      case "revoke-key": {
        const found = await gw.accounts.findKey(need(values.key, "key"));
        if (!found) throw new Error(`no key ${values.key}`);
        return { key: found.id, revoked: await gw.accounts.revokeKey(found.id) };
      }
      case "suspend":
      case "resume": {
        const status = command === "suspend" ? "suspended" : "active";
        if ((values.account === undefined) === (values.key === undefined))
          throw new Error(`${command} takes --account or --key (one of them)`);
        if (values.account !== undefined) {
          if (!(await gw.accounts.account(values.account))) throw new Error(`no account ${values.account}`);
          await gw.accounts.setAccountStatus(values.account, status);
          return { account: values.account, status };
        }
        const found = await gw.accounts.findKey(values.key!);
        if (!found) throw new Error(`no key ${values.key}`);
        if (found.status === "revoked") throw new Error(`key ${found.id} is revoked; a revoked key stays revoked`);
        await gw.accounts.setKeyStatus(found.id, status);
        return { key: found.id, status };
      }
      case "pause": {
        const message = need(values.message, "message").trim();
        if (!message) throw new Error("--message is required: say why, as the refusals show it");
        return { paused: await gw.service.pause(message) };
      }
      case "unpause":
        return { unpaused: await gw.service.unpause() };
      case "call-cap": {
        const account = need(values.account, "account");
        if (!(await gw.accounts.account(account))) throw new Error(`no account ${account}`);
        const calls = need(values.calls, "calls");
        const cap = calls === "off" ? null : whole(calls, "--calls");
        await gw.accounts.setAccountCallCap(account, cap);
        return { account, call_cap: cap };
      }
      case "create-user": {
        const account = need(values.account, "account");
        if (!(await gw.accounts.account(account))) throw new Error(`no account ${account}`);
        const email = need(values.email, "email");
        const made = !values["password-stdin"];
        const password = made
          ? newPassword()
          : (io.readStdin ?? (() => readFileSync(0, "utf8")))().replace(/\r?\n$/, "");
        if (password.length < PASSWORD_MIN || Buffer.byteLength(password) > PASSWORD_MAX)
          throw new Error(`the password must be ${PASSWORD_MIN} characters to ${PASSWORD_MAX} bytes`);
        const user = await gw.sessions.createUser({
          accountId: account,
          email,
          passwordHash: hashPasswordSync(password),
        });
        return {
          user: user.id,
          account: user.account_id,
          email: user.email,
          ...(made ? { password, note: "The password is shown once; only its hash is stored." } : {}),
        };
      }
      case "disable-user": {
        const email = need(values.email, "email");
        const done = await gw.sessions.disableUser(email);
        if (!done) throw new Error(`no user ${email}`);
        return { user: done.user.id, email: done.user.email, disabled: true, sessions_ended: done.sessionsEnded };
      }
      case "conformance-keys": {
        const credits = whole(values.credits, "--credits") ?? CONFORMANCE_CREDITS;
        if (credits < 1)
          throw new Error("--credits must be at least 1: the suite's calls that return data are charged");
        const name = values.name ?? `conformance ${new Date().toISOString()}`;
        const paid = (await gw.accounts.createAccount({ name, plan: "paid", dailyLimit: null })).account;
        await gw.accounts.grant(paid.id, credits, "conformance-keys");
        const make = async (
          accountId: string,
          keyName: string,
          extra: { permissions?: string[]; dailyLimit?: number } = {},
        ) =>
          (
            await gw.accounts.createKey({
              accountId,
              name: keyName,
              permissions: extra.permissions ?? ["read_data"],
              dailyLimit: extra.dailyLimit ?? null,
              expiresAt: null,
            })
          ).secret;
        const key = await make(paid.id, "conformance main");
        const secondKey = await make(paid.id, "conformance second");
        const noscopeKey = await make(paid.id, "conformance without read_data", { permissions: [] });
        const dailyLimitKey = await make(paid.id, "conformance daily limit 0", { dailyLimit: 0 });
        const broke = (
          await gw.accounts.createAccount({ name: `${name} (no credits)`, plan: "paid", dailyLimit: null })
        ).account;
        const insufficientBalanceKey = await make(broke.id, "conformance no credits");
        const out: ConformanceKeysOutput = { key, secondKey, noscopeKey, insufficientBalanceKey, dailyLimitKey };
        return out;
      }
      case "list-keys":
        return (await gw.accounts.keys(values.account)).map((k) => ({
          id: k.id,
          prefix: k.prefix,
          account: k.account_id,
          name: k.name,
          status: k.exposed_at ? "exposed" : k.status,
          permissions: JSON.parse(k.permissions) as string[],
          daily_limit: k.daily_limit,
          created_at: k.created_at,
          expires_at: k.expires_at,
        }));
      default:
        throw new Error(`unknown command ${command}`);
    }
  } finally {
    await gw.close();
  }
}

/** What the commands use of a gateway, and how it is closed. */
type AdminGateway = Pick<GatewayPorts, "accounts" | "service" | "sessions"> & { close(): Promise<void> };

/**
 * Opens the server's state for the commands: the PostgreSQL database of `databaseUrl` (D108; migrated to this
 * build's schema if needed), else the SQLite file `dbPath` (default ./data/sdgw.sqlite), without recovering runs.
 */
async function openAdmin(databaseUrl: string | undefined, dbPath: string | undefined): Promise<AdminGateway> {
  if (databaseUrl !== undefined && databaseUrl !== "") {
    if (!isPostgresUrl(databaseUrl))
      throw new Error(
        `SDGW_DATABASE_URL (--database-url) must be a PostgreSQL URL, ` +
          `postgres://user[:password]@host[:port]/database (got ${JSON.stringify(withoutPassword(databaseUrl))})`,
      );
    const { openPgAdmin } = await import("./storage/postgres/admin.ts");
    return openPgAdmin(databaseUrl);
  }
  const gw = createGateway({ dbPath: dbPath ?? "./data/sdgw.sqlite", log: () => undefined, recover: false });
  return { accounts: gw.accounts, service: gw.service, sessions: gw.sessions, close: () => gw.store.close() };
}
