/**
 * Durable storage: a restart keeps accounts, keys, the ledger, idempotency records, runs and results. A process
 * killed (SIGKILL) while a run holds credits loses nothing and never charges twice: on restart the run is ended as
 * broken, its hold released, its handle reads 500 internal_error, and its Idempotency-Key is free again, so the
 * same call sent again runs once and is charged once.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, truncateSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterAll, describe, expect, it } from "vitest";
import { createServer, type SdgwServer } from "../src/storage/sqlite/server.ts";
import { GENEROUS, newIdem, validateAnswer } from "./helpers.ts";

const dir = mkdtempSync(join(tmpdir(), "sdgw-durable-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const open = (db: string, options: Parameters<typeof createServer>[0] = {}) =>
  createServer({ dbPath: db, waitMs: 2000, log: () => undefined, limits: GENEROUS, ...options });

function audit(server: SdgwServer, accountId: string) {
  const s = server.gateway.ledger.audit(accountId);
  expect(s.balance + s.charges).toBe(s.grants);
  expect(s.held).toBe(s.holdsHeld);
  return s;
}

async function inject(
  server: SdgwServer,
  op: Parameters<typeof validateAnswer>[0],
  url: string,
  key: string,
  idem?: string,
) {
  const res = await server.app.inject({
    method: "GET",
    url,
    headers: { "x-api-key": key, ...(idem ? { "idempotency-key": idem } : {}) },
  });
  return validateAnswer(op, res);
}

/** A database file `name` in the test folder with one account of 10 credits and its key (the server closed again). */
async function funded(name: string, accountName: string) {
  const db = join(dir, name);
  const setup = open(db);
  const { account } = setup.gateway.accounts.createAccount({ name: accountName });
  setup.gateway.accounts.grant(account.id, 10);
  const key = setup.gateway.accounts.createKey({ accountId: account.id }).secret;
  await setup.close();
  return { db, account, key };
}

/** The server of children/holding-server.ts over `db` (x takes 60 s; a call answers 202 after `waitMs`). */
async function holdingServer(db: string, waitMs: number): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(
    process.execPath,
    [
      "--conditions=source",
      "--no-warnings",
      join(import.meta.dirname, "children", "holding-server.ts"),
      db,
      String(waitMs),
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const url = await new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (c: Buffer) => {
      out += c.toString();
      if (out.includes("\n")) resolve((JSON.parse(out.split("\n")[0]!) as { url: string }).url);
    });
    child.once("exit", (code) => reject(new Error(`child exited ${code}`)));
  });
  return { child, url };
}

describe("durability", () => {
  it("keeps accounts, keys, ledger, idempotency records and results across a restart", async () => {
    const db = join(dir, "restart.sqlite");
    let server = open(db, { waitMs: 10 });
    const { account } = server.gateway.accounts.createAccount({ name: "Durable" });
    server.gateway.accounts.grant(account.id, 50);
    const key = server.gateway.accounts.createKey({ accountId: account.id }).secret;
    const idem = newIdem();
    server.gateway.simulator!.setKnobs("*", { latencyMs: 30 });
    const first = await inject(server, "search", "/v1/search?platform=weibo&query=a", key, idem);
    expect(first.status).toBe(202);
    await server.gateway.runs.drain();
    await server.close();

    server = open(db);
    const replay = await inject(server, "search", "/v1/search?platform=weibo&query=a", key, idem);
    expect(replay.headers["idempotent-replayed"]).toBe("true");
    const read = await inject(server, "getResult", `/v1/results/${first.json.handle}`, key);
    expect(read.status).toBe(200);
    expect(read.json.billing).toMatchObject({ cost: 1, balance: 49 });
    expect(audit(server, account.id)).toMatchObject({ balance: 49, grants: 50, charges: 1 });
    await server.close();
  });

  it("loses nothing and never charges twice when the process dies while a run holds credits", async () => {
    const { db, account, key } = await funded("crash.sqlite", "Crash");

    const { child, url } = await holdingServer(db, 30);
    const idem = newIdem();
    const res = await fetch(`${url}/v1/search?platforms=x,reddit&query=a`, {
      headers: { "x-api-key": key, "idempotency-key": idem },
    });
    const a = validateAnswer("search", {
      statusCode: res.status,
      headers: Object.fromEntries(res.headers),
      body: await res.text(),
    });
    expect(a.status).toBe(202);
    expect(a.json.cells).toHaveLength(1);
    // A call that answered 202 outlives its request: its hold was written before the 202 was sent.
    const peek = new DatabaseSync(db, { readOnly: true });
    expect(peek.prepare("SELECT amount, state FROM holds").all()).toEqual([{ amount: 2, state: "held" }]);
    peek.close();
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGKILL");
    await exited;

    const server = open(db);
    expect(server.gateway.recovered).toBe(1);
    expect(audit(server, account.id)).toMatchObject({ balance: 10, charges: 0, held: 0 });
    const read = await inject(server, "getResult", `/v1/results/${a.json.handle}`, key);
    expect(read.status).toBe(500);
    expect(read.json.code).toBe("internal_error");
    const again = await inject(server, "search", "/v1/search?platforms=x,reddit&query=a", key, idem);
    expect(again.status).toBe(200);
    expect(again.json.billing).toMatchObject({ cost: 2, balance: 8 });
    const replay = await inject(server, "search", "/v1/search?platforms=x,reddit&query=a", key, idem);
    expect(replay.headers["idempotent-replayed"]).toBe("true");
    expect(audit(server, account.id)).toMatchObject({ balance: 8, charges: 2 });
    await server.close();
  }, 120_000);

  it("loses nothing and never charges twice when the process dies during a call that would end within its request", async () => {
    const { db, account, key } = await funded("crash-inline.sqlite", "Crash inline");

    const { child, url } = await holdingServer(db, 120_000);
    const idem = newIdem();
    const pending = fetch(`${url}/v1/search?platforms=x,reddit&query=a`, {
      headers: { "x-api-key": key, "idempotency-key": idem },
    }).catch(() => "no answer");
    // The hold is in memory: the account's billing counts it, the database holds nothing of it.
    let spend = 0;
    for (let i = 0; i < 100 && spend === 0; i++) {
      await new Promise((r) => setTimeout(r, 20));
      const view = await fetch(`${url}/v1/account`, { headers: { "x-api-key": key } });
      spend = ((await view.json()) as { billing: { today_spend_credits: number } }).billing.today_spend_credits;
    }
    expect(spend).toBe(2);
    const busy = await fetch(`${url}/v1/search?platforms=x,reddit&query=a`, {
      headers: { "x-api-key": key, "idempotency-key": idem },
    });
    expect(busy.status).toBe(409);
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGKILL");
    await exited;
    expect(await pending).toBe("no answer");

    const server = open(db);
    expect(server.gateway.recovered).toBe(0);
    expect(server.gateway.store.all("SELECT * FROM holds")).toEqual([]);
    expect(audit(server, account.id)).toMatchObject({ balance: 10, charges: 0, held: 0 });
    const again = await inject(server, "search", "/v1/search?platforms=x,reddit&query=a", key, idem);
    expect(again.status).toBe(200);
    expect(again.headers["idempotent-replayed"]).toBeUndefined();
    expect(again.json.billing).toMatchObject({ cost: 2, balance: 8 });
    const replay = await inject(server, "search", "/v1/search?platforms=x,reddit&query=a", key, idem);
    expect(replay.headers["idempotent-replayed"]).toBe("true");
    expect(replay.text).toBe(again.text);
    expect(audit(server, account.id)).toMatchObject({ balance: 8, charges: 2 });
    await server.close();
  }, 120_000);
  it("replays a first answer after the process is killed, from the answer log; bytes gone since answer 500, charging nothing", async () => {
    const { db, account, key } = await funded("answers.sqlite", "Answers");

    const { child, url } = await holdingServer(db, 120_000);
    const idem = newIdem();
    const res = await fetch(`${url}/v1/search?platform=weibo&query=%E9%9C%B2%E8%90%A5`, {
      headers: { "x-api-key": key, "idempotency-key": idem },
    });
    const first = await res.text();
    expect(res.status).toBe(200);
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGKILL"); // no close: what it wrote is what the operating system has
    await exited;

    let server = open(db);
    const replay = await inject(server, "search", "/v1/search?platform=weibo&query=%E9%9C%B2%E8%90%A5", key, idem);
    expect(replay.headers["idempotent-replayed"]).toBe("true");
    expect(replay.text).toBe(first);
    expect(server.gateway.store.get("SELECT answer FROM idempotency")).toEqual({ answer: null });
    expect(audit(server, account.id)).toMatchObject({ balance: 9, charges: 1 });
    await server.close();

    truncateSync(join(`${db}-answers`, "00000001.answers"), 0); // as a power loss could leave it
    server = open(db);
    const lost = await inject(server, "search", "/v1/search?platform=weibo&query=%E9%9C%B2%E8%90%A5", key, idem);
    expect(lost.status).toBe(500);
    expect(lost.json.code).toBe("internal_error");
    expect(lost.json.message).toMatch(/lost/);
    expect(audit(server, account.id)).toMatchObject({ balance: 9, charges: 1 });
    await server.close();
  }, 120_000);
});
