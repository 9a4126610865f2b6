/**
 * Ids PostgreSQL cannot hold: a NUL (`%00`) in a path id, a lone surrogate or an invalid UTF-8 percent-escape, in
 * a results handle, a schedule id, a console key id, a console session cookie and a sign-in email. PostgreSQL
 * refuses `\u0000` in text (SQLSTATE 22021), which answered 500 on the server on PostgreSQL while the embedded
 * server answered 404: a lookup by a value that cannot be stored finds nothing, on both. Each request is sent to the
 * embedded server and to one on PostgreSQL (createPgServer) and must get the same status and code. Needs PostgreSQL
 * (see pg-helpers.ts).
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPgServer, type PgServer } from "../src/storage/postgres/server.ts";
import { createServer, type SdgwServer } from "../src/storage/sqlite/server.ts";
import type { GatewayPorts } from "../src/storage/port.ts";
import { hashPasswordSync } from "../src/storage/sessions.ts";
import { GENEROUS } from "./helpers.ts";
import { pgUrl, testDatabase, type TestDatabase } from "./pg-helpers.ts";

const EMAIL = "ada@example.com";
const PASSWORD = "correct horse battery staple";

interface Side {
  name: string;
  app: FastifyInstance;
  key: string;
  cookie: string;
  csrf: string;
  failures: unknown[];
}

let t: TestDatabase;
let embedded: SdgwServer;
let onPg: PgServer;
const sides: Side[] = [];

async function prepare(name: string, app: FastifyInstance, gw: GatewayPorts, failures: unknown[]): Promise<Side> {
  const { account } = await gw.accounts.createAccount({ name: "Ids", plan: "paid" });
  await gw.accounts.grant(account.id, 100);
  const key = (await gw.accounts.createKey({ accountId: account.id, name: "test" })).secret;
  await gw.sessions.createUser({ accountId: account.id, email: EMAIL, passwordHash: hashPasswordSync(PASSWORD) });
  const signIn = await app.inject({
    method: "POST",
    url: "/console/session",
    headers: { "content-type": "application/json" },
    payload: JSON.stringify({ email: EMAIL, password: PASSWORD }),
  });
  expect(signIn.statusCode, signIn.body).toBe(200);
  const cookie = String(signIn.headers["set-cookie"]).split(";")[0]!;
  return { name, app, key, cookie, csrf: JSON.parse(signIn.body).csrf_token as string, failures };
}

beforeAll(async () => {
  t = await testDatabase("unstorable", 1);
  const embeddedFailures: unknown[] = [];
  const pgFailures: unknown[] = [];
  const log = (into: unknown[]) => (message: string, e?: unknown) => into.push(`${message}: ${String(e)}`);
  embedded = createServer({ dbPath: ":memory:", limits: GENEROUS, log: log(embeddedFailures) });
  onPg = await createPgServer({ databaseUrl: pgUrl(t.name), limits: GENEROUS, log: log(pgFailures) });
  sides.push(await prepare("embedded", embedded.app, embedded.gateway, embeddedFailures));
  sides.push(await prepare("postgres", onPg.app, onPg.gateway, pgFailures));
}, 60_000);

afterAll(async () => {
  await embedded?.close();
  await onPg?.close({ drainMs: 200 });
  await t?.drop();
});

/** A value that is not text PostgreSQL stores, as it may be written in a URL path. */
const BAD = ["%00", "run_%00", "a%00b", "%ED%A0%80", "%FF", "%C0%80", "x%F0%9F"];

type Request = (s: Side) => {
  method: "GET" | "POST" | "DELETE";
  url: string;
  headers?: Record<string, string>;
  payload?: string;
};

const requests: Record<string, Request> = {};
for (const bad of BAD) {
  requests[`GET /v1/results/${bad}`] = (s) => ({
    method: "GET",
    url: `/v1/results/${bad}`,
    headers: { "x-api-key": s.key },
  });
  requests[`GET /v1/results/${bad} (session)`] = (s) => ({
    method: "GET",
    url: `/v1/results/${bad}`,
    headers: { cookie: s.cookie },
  });
  requests[`DELETE /v1/schedules/${bad}`] = (s) => ({
    method: "DELETE",
    url: `/v1/schedules/${bad}`,
    headers: { "x-api-key": s.key },
  });
  requests[`POST /v1/call/${bad}`] = (s) => ({
    method: "POST",
    url: `/v1/call/${bad}`,
    headers: { "x-api-key": s.key, "idempotency-key": "k1", "content-type": "application/json" },
    payload: "{}",
  });
  requests[`POST /v1/tools/${bad}`] = (s) => ({
    method: "POST",
    url: `/v1/tools/${bad}`,
    headers: { "x-api-key": s.key, "idempotency-key": "k1", "content-type": "application/json" },
    payload: "{}",
  });
  for (const method of ["POST", "DELETE"] as const)
    requests[`${method} /console/api/keys/${bad}`] = (s) => ({
      method,
      url: `/console/api/keys/${bad}`,
      headers: { cookie: s.cookie, "x-csrf-token": s.csrf, "content-type": "application/json" },
      ...(method === "POST" ? { payload: "{}" } : {}),
    });
}
for (const email of ["ada\u0000@example.com", "\u0000", "ada\ud800@example.com", "\udfff@example.com"])
  requests[`POST /console/session ${JSON.stringify(email)}`] = () => ({
    method: "POST",
    url: "/console/session",
    headers: { "content-type": "application/json" },
    payload: JSON.stringify({ email, password: PASSWORD }),
  });
for (const token of ["abc\u0000", "%00"])
  requests[`GET /console/session, cookie ${JSON.stringify(token)}`] = () => ({
    method: "GET",
    url: "/console/session",
    headers: { cookie: `sdgw_session=${token}` },
  });

describe("values PostgreSQL cannot store answer as on the embedded server", () => {
  it.each(Object.keys(requests))("%s", async (name) => {
    const answers = [];
    for (const s of sides) {
      const res = await s.app.inject(requests[name]!(s));
      const body = JSON.parse(res.body) as { code?: string; fix?: { param?: string } };
      answers.push({ status: res.statusCode, code: body.code, param: body.fix?.param });
    }
    expect(answers[1], `${sides[0]!.name}: ${JSON.stringify(answers[0])}`).toEqual(answers[0]);
    expect(answers[0]!.status).toBeLessThan(500);
  });
  it("a sign-in whose body is not UTF-8 (an email with a byte 0xFF) answers alike", async () => {
    const answers = [];
    for (const s of sides) {
      const payload = Buffer.concat([
        Buffer.from('{"email":"ada'),
        Buffer.from([0xff]),
        Buffer.from('@example.com","password":"x"}'),
      ]);
      const res = await s.app.inject({
        method: "POST",
        url: "/console/session",
        headers: { "content-type": "application/json" },
        payload,
      });
      answers.push([res.statusCode, JSON.parse(res.body).fix?.param]);
    }
    expect(answers).toEqual([
      [400, "body"],
      [400, "body"],
    ]);
  });

  it("the lookups themselves find nothing by such a value, as on the embedded store", async () => {
    const found: Record<string, unknown>[] = [];
    for (const [i, gw] of ([embedded.gateway, onPg.gateway] as GatewayPorts[]).entries()) {
      const key = (await gw.accounts.keyBySecret(sides[i]!.key))!;
      const read = await gw.runs.read({ handle: "run_\u0000", key, format: undefined, requestId: "req_test" });
      found.push({
        account: await gw.accounts.account("acc_\u0000"),
        workspace: await gw.accounts.workspace("ws_\ud800"),
        key: await gw.accounts.key("key_\u0000"),
        findKey: await gw.accounts.findKey("sdgw_\u0000"),
        read: read.status,
        operationOf: await gw.runs.operationOf("run_\u0000", key.id),
        byIdempotencyKey: await gw.runs.handleOfIdempotencyKey(key.id, "k\u0000"),
        removed: await gw.schedules.remove(key.workspace_id, "sch_\u0000"),
        user: await gw.sessions.userByEmail("ada\u0000@example.com"),
        signIn: await gw.sessions.signIn("ada\u0000@example.com", PASSWORD, "127.0.0.1"),
        signInSurrogate: await gw.sessions.signIn("ada\udc00@example.com", PASSWORD, "127.0.0.1"),
      });
    }
    expect(found[1]).toEqual(found[0]);
    expect(found[0]).toMatchObject({ read: 404, signIn: { ok: false, refusal: "invalid" } });
  });

  it("nothing was logged as a failure", () => {
    for (const s of sides) expect(s.failures, s.name).toEqual([]);
  });
});
