/** The admin CLI (`sdgw-admin`) over a database file, and the demo account of `pnpm start`. */
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ADMIN_USAGE, runAdmin } from "../src/admin.ts";
import { seedDemo } from "../src/demo.ts";
import { createServer } from "../src/storage/sqlite/server.ts";
import { Simulator, type PlatformProvider } from "@sdgw/engine";

const dir = mkdtempSync(join(tmpdir(), "sdgw-admin-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const nextTurn = () => new Promise((r) => setImmediate(r));

describe("sdgw-admin", () => {
  const bin = join(import.meta.dirname, "..", "src", "bin", "sdgw-admin.ts");
  const admin = (args: string[]) => {
    try {
      return {
        code: 0,
        stdout: execFileSync(process.execPath, ["--conditions=source", bin, ...args], {
          encoding: "utf8",
          stdio: "pipe",
        }),
        stderr: "",
      };
    } catch (e) {
      const err = e as { status: number; stdout: string; stderr: string };
      return { code: err.status, stdout: err.stdout, stderr: err.stderr };
    }
  };

  it("--help prints every command and exits 0; an unknown command says so and opens no database", () => {
    for (const args of [["--help"], ["-h"], ["help"], ["grant", "--help"]]) {
      const ran = admin(args);
      expect(ran.code, args.join(" ")).toBe(0);
      expect(ran.stdout.trim()).toBe(ADMIN_USAGE);
    }
    for (const command of [
      "create-account",
      "grant",
      "create-key",
      "revoke-key",
      "list-keys",
      "suspend",
      "resume",
      "pause",
      "unpause",
      "conformance-keys",
    ])
      expect(ADMIN_USAGE).toContain(command);
    const db = join(dir, "never-made.sqlite");
    const typo = admin(["creat-account", "--db", db]);
    expect(typo.code).toBe(1);
    expect(typo.stderr).toMatch(
      /unknown command creat-account; commands: create-account, grant, create-key, revoke-key, list-keys, suspend, resume, pause, unpause, call-cap, create-user, disable-user, conformance-keys \(sdgw-admin --help\)/,
    );
    expect(existsSync(db)).toBe(false);
  });

  it("suspends and resumes an account or a key, seen at once by a server open on the same database", async () => {
    const db = join(dir, "suspend.sqlite");
    const acc = (await runAdmin(["create-account", "--db", db, "--name", "Acme"])) as { account: string };
    await runAdmin(["grant", "--db", db, "--account", acc.account, "--credits", "10"]);
    const key = (await runAdmin(["create-key", "--db", db, "--account", acc.account])) as {
      key: string;
      secret: string;
      prefix: string;
    };
    const server = createServer({ dbPath: db, log: () => undefined });
    // A write of another connection is seen from the server's next turn of the event loop (Store.sync), as a
    // request arriving on a socket always is.
    const reason = async () => {
      await nextTurn();
      const res = await server.app.inject({ method: "GET", url: "/v1/account", headers: { "x-api-key": key.secret } });
      return res.statusCode === 200 ? "ok" : (JSON.parse(res.body) as { reason: string }).reason;
    };
    expect(await reason()).toBe("ok");
    expect(await runAdmin(["suspend", "--db", db, "--key", key.prefix])).toEqual({ key: key.key, status: "suspended" });
    expect(await reason()).toBe("suspended");
    await runAdmin(["resume", "--db", db, "--key", key.key]);
    expect(await reason()).toBe("ok");
    expect(await runAdmin(["suspend", "--db", db, "--account", acc.account])).toEqual({
      account: acc.account,
      status: "suspended",
    });
    expect(await reason()).toBe("suspended");
    await runAdmin(["resume", "--db", db, "--account", acc.account]);
    expect(await reason()).toBe("ok");
    // A grant made by the CLI is spendable at once; a revocation holds at once.
    await runAdmin(["grant", "--db", db, "--account", acc.account, "--credits", "5"]);
    await nextTurn();
    const account = await server.app.inject({
      method: "GET",
      url: "/v1/account",
      headers: { "x-api-key": key.secret },
    });
    expect(JSON.parse(account.body).billing.balance_credits).toBe(15);
    await runAdmin(["revoke-key", "--db", db, "--key", key.key]);
    expect(await reason()).toBe("revoked");
    await expect(runAdmin(["suspend", "--db", db, "--key", key.key])).rejects.toThrow(/revoked/);
    await expect(runAdmin(["suspend", "--db", db])).rejects.toThrow(/--account or --key/);
    await server.close();
  });

  it("pause: charged calls answer 503 temporarily_unavailable (paused) and start nothing; quotes and reads work; unpause (D60)", async () => {
    const db = join(dir, "pause.sqlite");
    const acc = (await runAdmin(["create-account", "--db", db, "--name", "Acme"])) as { account: string };
    await runAdmin(["grant", "--db", db, "--account", acc.account, "--credits", "10"]);
    const { secret } = (await runAdmin(["create-key", "--db", db, "--account", acc.account])) as { secret: string };
    const server = createServer({ dbPath: db, log: () => undefined });
    const call = async (method: "GET" | "POST", url: string, body?: unknown, idem = "pause-1") => {
      await nextTurn();
      const res = await server.app.inject({
        method,
        url,
        headers: {
          "x-api-key": secret,
          "idempotency-key": idem,
          ...(body ? { "content-type": "application/json" } : {}),
        },
        ...(body ? { payload: JSON.stringify(body) } : {}),
      });
      return { status: res.statusCode, headers: res.headers, body: JSON.parse(res.body) as Record<string, any> };
    };
    // In one thread the server's turn (its write transaction) must end before another connection writes; separate
    // processes just wait for each other.
    const admin = async (args: string[]) => {
      await nextTurn();
      return runAdmin([...args, "--db", db]);
    };
    const balance = async () => (await call("GET", "/v1/account")).body["billing"].balance_credits as number;
    await expect(admin(["pause"])).rejects.toThrow(/--message is required/);
    expect(await admin(["pause", "--message", "Maintenance until 14:00 UTC."])).toMatchObject({
      paused: { message: "Maintenance until 14:00 UTC." },
    });
    const refused = await call("GET", "/v1/search?platform=x&query=a");
    expect([refused.status, refused.body["code"], refused.body["reason"]]).toEqual([
      503,
      "temporarily_unavailable",
      "paused",
    ]);
    expect(refused.body["message"]).toContain("Maintenance until 14:00 UTC.");
    expect(Number(refused.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    expect(
      (await call("POST", "/v1/tools/brand_buzz", { query: "q", platforms: ["weibo"], confirm: false }, "quote-1"))
        .status,
    ).toBe(200);
    expect(await balance()).toBe(10);
    expect(await admin(["unpause"])).toEqual({ unpaused: true });
    // The same Idempotency-Key runs now: the refusal claimed nothing.
    const ran = await call("GET", "/v1/search?platform=x&query=a");
    expect(ran.status).toBe(200);
    expect(await balance()).toBe(9);
    expect(await admin(["unpause"])).toEqual({ unpaused: false });
    await server.close();
  });

  it("call-cap: over the account's calls of the day, 503 temporarily_unavailable daily_cap until UTC midnight; nothing held or claimed (D74)", async () => {
    const db = join(dir, "cap.sqlite");
    const acc = (await runAdmin(["create-account", "--db", db, "--name", "Capped"])) as { account: string };
    await runAdmin(["grant", "--db", db, "--account", acc.account, "--credits", "100"]);
    const { secret } = (await runAdmin(["create-key", "--db", db, "--account", acc.account])) as { secret: string };
    let offset = 0;
    const server = createServer({ dbPath: db, log: () => undefined, now: () => Date.now() + offset });
    const call = async (url: string, idem: string, method: "GET" | "POST" = "GET", body?: unknown) => {
      await nextTurn();
      const res = await server.app.inject({
        method,
        url,
        headers: {
          "x-api-key": secret,
          "idempotency-key": idem,
          ...(body ? { "content-type": "application/json" } : {}),
        },
        ...(body ? { payload: JSON.stringify(body) } : {}),
      });
      return { status: res.statusCode, headers: res.headers, body: JSON.parse(res.body) as Record<string, any> };
    };
    const balance = async () => (await call("/v1/account", "acct")).body["billing"].balance_credits as number;
    await expect(runAdmin(["call-cap", "--db", db, "--account", acc.account, "--calls", "three"])).rejects.toThrow(
      /--calls must be a whole number/,
    );
    await expect(runAdmin(["call-cap", "--db", db, "--account", "acc_nope", "--calls", "3"])).rejects.toThrow(
      /no account acc_nope/,
    );
    await nextTurn();
    expect(await runAdmin(["call-cap", "--db", db, "--account", acc.account, "--calls", "3"])).toEqual({
      account: acc.account,
      call_cap: 3,
    });
    // a two-platform search is two calls (each platform a call, as D43 counts them); one more fits, then none
    expect((await call("/v1/search?platforms=x,weibo&query=a", "c1")).status).toBe(200);
    expect((await call("/v1/search?platform=x&query=b", "c2")).status).toBe(200);
    expect(await balance()).toBe(97);
    const refused = await call("/v1/search?platform=x&query=c", "c3");
    expect([refused.status, refused.body["code"], refused.body["reason"], refused.body["retryable"]]).toEqual([
      503,
      "temporarily_unavailable",
      "daily_cap",
      true,
    ]);
    const midnight = new Date(Date.now() + offset);
    const resets = new Date(Date.UTC(midnight.getUTCFullYear(), midnight.getUTCMonth(), midnight.getUTCDate() + 1));
    expect(Date.parse(refused.body["resets_at"])).toBe(resets.getTime());
    expect(Number(refused.headers["retry-after"])).toBeGreaterThanOrEqual(
      Math.floor((resets.getTime() - Date.now() - offset) / 1000) - 2,
    );
    expect(refused.body["message"]).toMatch(/3 of its 3 calls/);
    expect(refused.body["fix"]).toMatchObject({ action_url: expect.stringMatching(/^https?:/) });
    // a quote runs nothing and still answers; reads of results and the account too
    expect(
      (await call("/v1/tools/brand_buzz", "q1", "POST", { query: "q", platforms: ["weibo"], confirm: false })).status,
    ).toBe(200);
    expect(await balance()).toBe(97);
    // raising the cap lets the same Idempotency-Key run: the refusal claimed nothing
    await nextTurn();
    await runAdmin(["call-cap", "--db", db, "--account", acc.account, "--calls", "4"]);
    expect((await call("/v1/search?platform=x&query=c", "c3")).status).toBe(200);
    expect((await call("/v1/search?platform=x&query=d", "c4")).status).toBe(503);
    // the next UTC day starts from zero
    offset = resets.getTime() - Date.now() + 1000;
    expect((await call("/v1/search?platform=x&query=d", "c4")).status).toBe(200);
    await nextTurn();
    expect(await runAdmin(["call-cap", "--db", db, "--account", acc.account, "--calls", "off"])).toEqual({
      account: acc.account,
      call_cap: null,
    });
    expect(await balance()).toBe(95);
    const audit = server.gateway.ledger.audit(acc.account);
    expect(audit.balance + audit.charges).toBe(audit.grants);
    expect([audit.held, audit.inMemory]).toEqual([0, 0]);
    await server.close();
  });

  it("call-cap holds under concurrent calls: 12 at once on a cap of 5 start exactly 5 (D74)", async () => {
    const server = createServer({
      dbPath: ":memory:",
      log: () => undefined,
      limits: { keyQps: 100, workspaceConcurrency: 100 },
    });
    const gw = server.gateway;
    const { account } = gw.accounts.createAccount({ name: "burst", callCap: 5 });
    gw.accounts.grant(account.id, 100, "test");
    const key = gw.accounts.createKey({ accountId: account.id }).secret;
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        server.app.inject({
          method: "GET",
          url: `/v1/search?platform=x&query=q${i}`,
          headers: { "x-api-key": key, "idempotency-key": `b${i}` },
        }),
      ),
    );
    const codes = answers.map((a) =>
      a.statusCode === 200 ? "ok" : ((JSON.parse(a.body) as { reason?: string }).reason ?? String(a.statusCode)),
    );
    expect(codes.filter((c) => c === "ok")).toHaveLength(5);
    expect(codes.filter((c) => c === "daily_cap")).toHaveLength(7);
    expect(gw.ledger.audit(account.id)).toMatchObject({ grants: 100, charges: 5, balance: 95, held: 0, inMemory: 0 });
    await server.close();
  });

  it("creates accounts and keys, grants credits, lists and revokes keys", async () => {
    const db = join(dir, "admin.sqlite");
    const acc = (await runAdmin(["create-account", "--db", db, "--name", "Acme", "--plan", "free"])) as {
      account: string;
    };
    expect(await runAdmin(["grant", "--db", db, "--account", acc.account, "--credits", "250"])).toEqual({
      account: acc.account,
      balance: 250,
    });
    const key = (await runAdmin([
      "create-key",
      "--db",
      db,
      "--account",
      acc.account,
      "--name",
      "ci",
      "--daily-limit",
      "40",
    ])) as { key: string; prefix: string; secret: string };
    expect(key.secret.startsWith(key.prefix)).toBe(true);
    const listed = (await runAdmin(["list-keys", "--db", db, "--account", acc.account])) as Array<
      Record<string, unknown>
    >;
    expect(listed).toEqual([
      expect.objectContaining({ id: key.key, prefix: key.prefix, status: "active", daily_limit: 40 }),
    ]);
    expect(JSON.stringify(listed)).not.toContain(key.secret);
    expect(await runAdmin(["revoke-key", "--db", db, "--key", key.prefix])).toEqual({ key: key.key, revoked: true });
    await expect(runAdmin(["grant", "--db", db, "--account", acc.account, "--credits=-3"])).rejects.toThrow(
      /whole number/,
    );
    await expect(runAdmin(["launch", "--db", db])).rejects.toThrow(/unknown command/);

    const server = createServer({ dbPath: db, log: () => undefined });
    const res = await server.app.inject({ method: "GET", url: "/v1/account", headers: { "x-api-key": key.secret } });
    expect(JSON.parse(res.body).reason).toBe("revoked");
    await server.close();
  });

  it("reaches a running server: what the CLI writes on the same file holds from the server's next request", async () => {
    const db = join(dir, "live.sqlite");
    // reddit's calls wait for `open()`: the run below is certainly still running when the account is read.
    let open!: () => void;
    const gate = new Promise<void>((r) => {
      open = r;
    });
    const simulator = new Simulator({});
    const gated = (p: PlatformProvider): PlatformProvider =>
      new Proxy(p, {
        get(target, name) {
          if (name === "call")
            return async (req: Parameters<PlatformProvider["call"]>[0]) => {
              await gate;
              return target.call(req);
            };
          const v = Reflect.get(target, name, target) as unknown;
          return typeof v === "function" ? v.bind(target) : v;
        },
      });
    const providers = { ...simulator.providers, reddit: gated(simulator.providers.reddit) };
    const server = createServer({ dbPath: db, log: () => undefined, waitMs: 20, providers });
    const gw = server.gateway;
    const { account } = gw.accounts.createAccount({ name: "Live" });
    gw.accounts.grant(account.id, 10);
    const key = gw.accounts.createKey({ accountId: account.id });
    const get = async (url: string) => {
      const res = await server.app.inject({
        method: "GET",
        url,
        headers: { "x-api-key": key.secret, "idempotency-key": `live-${Math.random()}` },
      });
      return JSON.parse(res.body) as Record<string, any>;
    };
    expect((await get("/v1/search?platform=x&query=a"))["billing"]).toMatchObject({ cost: 1, balance: 9 });
    // A run that answered 202 holds durably; the CLI opening the database leaves it alone.
    const running = await get("/v1/search?platform=reddit&query=a");
    expect(running["status"]).toBe("running");
    expect(await runAdmin(["grant", "--db", db, "--account", account.id, "--credits", "5"])).toEqual({
      account: account.id,
      balance: 14,
    });
    await nextTurn(); // the server checks for other connections' writes once per turn of its event loop
    expect((await get("/v1/account"))["billing"]).toMatchObject({ balance_credits: 14, today_spend_credits: 2 });
    open();
    await gw.runs.drain();
    await gw.store.durable(); // the CLI runs in this process here: let the server's turn commit before it writes
    expect(gw.ledger.audit(account.id)).toMatchObject({ balance: 13, charges: 2, held: 0, holdsHeld: 0 });
    await runAdmin(["revoke-key", "--db", db, "--key", key.id]);
    await nextTurn();
    expect((await get("/v1/search?platform=x&query=a"))["reason"]).toBe("revoked");
    await server.close();
  });

  it("conformance-keys: a new funded account and every key sdgw-conformance can use, as the JSON --keys-command reads", async () => {
    const db = join(dir, "conformance.sqlite");
    const keys = (await runAdmin(["conformance-keys", "--db", db, "--credits", "40"])) as Record<string, string>;
    expect(Object.keys(keys).sort()).toEqual(
      ["dailyLimitKey", "insufficientBalanceKey", "key", "noscopeKey", "secondKey"].sort(),
    );
    expect(new Set(Object.values(keys)).size).toBe(5);
    // Each key does what its option in @sdgw/conformance needs, on a server open on the same file.
    const server = createServer({ dbPath: db, log: () => undefined });
    const call = async (key: string, url: string) => {
      const res = await server.app.inject({
        method: "GET",
        url,
        headers: { "x-api-key": key, "idempotency-key": `ck-${Math.random()}` },
      });
      return { status: res.statusCode, body: JSON.parse(res.body) as Record<string, any> };
    };
    try {
      const main = await call(keys["key"]!, "/v1/account");
      expect(main.body["billing"]).toMatchObject({ balance_credits: 40 });
      expect((await call(keys["secondKey"]!, "/v1/account")).body["account"]["id"]).toBe(main.body["account"]["id"]);
      expect((await call(keys["key"]!, "/v1/search?platform=x&query=a")).status).toBe(200);
      const noscope = await call(keys["noscopeKey"]!, "/v1/search?platform=x&query=a");
      expect([noscope.status, noscope.body["code"]]).toEqual([403, "key_scope_denied"]);
      const broke = await call(keys["insufficientBalanceKey"]!, "/v1/search?platform=x&query=a");
      expect([broke.status, broke.body["code"]]).toEqual([402, "insufficient_balance"]);
      expect((await call(keys["insufficientBalanceKey"]!, "/v1/account")).body["account"]["id"]).not.toBe(
        main.body["account"]["id"],
      );
      const limited = await call(keys["dailyLimitKey"]!, "/v1/search?platform=x&query=a");
      expect([limited.status, limited.body["code"]]).toEqual([429, "daily_limit_reached"]);
    } finally {
      await server.close();
    }
    // The default is 500 credits; a count that is not a whole number, or 0, is refused naming --credits.
    const dflt = (await runAdmin(["conformance-keys", "--db", db])) as Record<string, string>;
    const again = createServer({ dbPath: db, log: () => undefined });
    try {
      const res = await again.app.inject({ method: "GET", url: "/v1/account", headers: { "x-api-key": dflt["key"]! } });
      expect(JSON.parse(res.body).billing).toMatchObject({ balance_credits: 500 });
    } finally {
      await again.close();
    }
    await expect(runAdmin(["conformance-keys", "--db", db, "--credits", "many"])).rejects.toThrow(
      /--credits must be a whole number/,
    );
    await expect(runAdmin(["conformance-keys", "--db", db, "--credits", "0"])).rejects.toThrow(
      /--credits must be at least 1/,
    );
  });

  it("runs as a command", () => {
    const db = join(dir, "cli.sqlite");
    const out = execFileSync(
      process.execPath,
      [
        "--conditions=source",
        "--no-warnings",
        join(import.meta.dirname, "..", "src", "bin", "sdgw-admin.ts"),
        "create-account",
        "--db",
        db,
        "--name",
        "Cli",
      ],
      { encoding: "utf8" },
    );
    expect(JSON.parse(out)).toMatchObject({ plan: "paid" });
  });

  it("seeds the demo account once and shows its key only the first time", async () => {
    const db = join(dir, "demo.sqlite");
    const s1 = createServer({ dbPath: db, log: () => undefined });
    const first = seedDemo(s1.gateway);
    expect(first.key).toMatch(/^sdgw_/);
    const res = await s1.app.inject({ method: "GET", url: "/v1/account", headers: { "x-api-key": first.key! } });
    expect(JSON.parse(res.body).billing.balance_credits).toBe(5000);
    await s1.close();
    const s2 = createServer({ dbPath: db, log: () => undefined });
    expect(seedDemo(s2.gateway)).toEqual({ accountId: first.accountId, key: null, prefix: first.prefix });
    await s2.close();
  });
});
