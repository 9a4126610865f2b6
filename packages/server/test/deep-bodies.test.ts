/**
 * D112, hostile JSON: a body of a few KB nested thousands of levels deep answered `500 internal_error` (the stack
 * overflowed after JSON.parse) on every body route, the keyless POST /v1/find too. Now every body route of the
 * contract (the generated table's), the console's JSON routes and /mcp refuse a body nested deeper than
 * MAX_BODY_DEPTH with a 400 naming `body` (at /mcp, the JSON-RPC parse error), whatever the nesting (arrays,
 * objects, both; the whole body or one parameter of an otherwise valid body): never a 5xx, nothing charged, nothing
 * logged as a failure. Over `app.inject` on the embedded server.
 */
import fc from "fast-check";
import { MAX_BODY_DEPTH, OPERATIONS } from "@sdgw/validators";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, type SdgwServer } from "../src/storage/sqlite/server.ts";
import { hashPasswordSync } from "../src/storage/sessions.ts";
import { SAMPLES } from "../../mock/test/helpers.ts";
import { BODY_OPERATIONS, deepBody, nest, pathOf } from "../../validators/test/deep-json.ts";
import { GENEROUS, newIdem } from "./helpers.ts";

const EMAIL = "ada@example.com";
const PASSWORD = "correct horse battery staple";
let server: SdgwServer;
let key = "";
let accountId = "";
let cookie = "";
let csrf = "";
const failures: string[] = [];

beforeAll(async () => {
  server = createServer({
    dbPath: ":memory:",
    limits: GENEROUS,
    log: (message, e) => failures.push(`${message}: ${String(e)}`),
  });
  const gw = server.gateway;
  const { account } = gw.accounts.createAccount({ name: "Deep", plan: "paid" });
  gw.accounts.grant(account.id, 1000);
  accountId = account.id;
  key = gw.accounts.createKey({ accountId, name: "test" }).secret;
  gw.sessions.createUser({ accountId, email: EMAIL, passwordHash: hashPasswordSync(PASSWORD) });
  const signIn = await server.app.inject({
    method: "POST",
    url: "/console/session",
    headers: { "content-type": "application/json" },
    payload: JSON.stringify({ email: EMAIL, password: PASSWORD }),
  });
  expect(signIn.statusCode).toBe(200);
  cookie = String(signIn.headers["set-cookie"]).split(";")[0]!;
  csrf = JSON.parse(signIn.body).csrf_token as string;
});

afterAll(async () => {
  await server?.close();
});

const balance = () => server.gateway.ledger.view(accountId, null).balance;

/** A valid body of each operation (the mock's samples), beside which one parameter nests too deep. */
const sampleOf = (operationId: string) => SAMPLES.find((s) => s.op === operationId && s.req.body !== undefined)?.req;

async function post(url: string, text: string, headers: Record<string, string> = {}) {
  const res = await server.app.inject({
    method: "POST",
    url,
    headers: { "content-type": "application/json", ...headers },
    payload: text,
  });
  return { status: res.statusCode, json: JSON.parse(res.body) as Record<string, any> };
}

describe("a body nested deeper than MAX_BODY_DEPTH (D112)", () => {
  it("the table lists the contract's body routes", () => {
    expect(BODY_OPERATIONS.map((o) => o.operationId).sort()).toEqual(
      Object.values(OPERATIONS)
        .filter((o) => o.method === "post")
        .map((o) => o.operationId)
        .sort(),
    );
    for (const op of BODY_OPERATIONS) expect(sampleOf(op.operationId), op.operationId).toBeDefined();
  });

  it.each(BODY_OPERATIONS.map((o) => [`POST ${o.path}`, o] as const))(
    "%s: 400 invalid_params naming body, never 5xx, nothing charged",
    async (_name, op) => {
      const sample = sampleOf(op.operationId)!;
      const before = balance();
      await fc.assert(
        fc.asyncProperty(deepBody(op, sample.body as Record<string, unknown>), async (deep) => {
          const a = await post(sample.path ?? pathOf(op), deep.text, {
            ...(op.keyless ? {} : { "x-api-key": key }),
            "idempotency-key": newIdem(),
          });
          expect([a.status, a.json["code"], a.json["fix"]?.param], `${deep.where} ${deep.shape} ${deep.depth}`).toEqual(
            [400, "invalid_params", "body"],
          );
          expect(a.json["message"]).toContain(`at most ${MAX_BODY_DEPTH}`);
        }),
        { numRuns: 12 },
      );
      expect(balance()).toBe(before);
    },
  );

  it("a body at the bound is still read (its own checks answer), and one over the size limit is still `body`", async () => {
    const atBound = await post("/v1/find", JSON.stringify({ query: JSON.parse(nest(MAX_BODY_DEPTH - 1, "mixed")) }));
    expect([atBound.status, atBound.json["fix"]?.param]).toEqual([400, "query"]);
    const huge = await post("/v1/find", nest(600_000, "array"));
    expect([huge.status, huge.json["code"], huge.json["fix"]?.param]).toEqual([400, "invalid_params", "body"]);
  });

  it("the console's JSON routes: sign-in, a new key, a key's change → 400 naming body", async () => {
    const session = { cookie, "x-csrf-token": csrf };
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(
          { url: "/console/session", headers: {}, base: { email: EMAIL, password: PASSWORD } },
          { url: "/console/api/keys", headers: session, base: { name: "laptop" } },
          { url: "/console/api/keys/key_none", headers: session, base: { daily_limit: 10 } },
        ),
        fc.integer({ min: MAX_BODY_DEPTH + 1, max: 5000 }),
        fc.constantFrom("array", "object", "mixed" as const),
        fc.boolean(),
        async (route, depth, shape, inField) => {
          const deep = nest(inField ? depth - 1 : depth, shape);
          const text = inField ? JSON.stringify(route.base).replace(/}$/, `,"x":${deep}}`) : deep;
          const a = await post(route.url, text, route.headers);
          expect([a.status, a.json["code"], a.json["fix"]?.param]).toEqual([400, "invalid_params", "body"]);
        },
      ),
      { numRuns: 30 },
    );
    // Nothing was made and the session still works.
    const keys = await server.app.inject({ method: "GET", url: "/console/api/keys", headers: { cookie } });
    expect(JSON.parse(keys.body).keys.map((k: { name: string }) => k.name)).toEqual(["test"]);
  });

  it("/mcp: 400 and the JSON-RPC parse error, for any message nested too deep; a normal one still answers", async () => {
    const mcp = { "x-api-key": key, accept: "application/json, text/event-stream" };
    const before = balance();
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(
          (d: string) => d,
          (d: string) => `[${d}]`,
          (d: string) => `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":${d}}}`,
          (d: string) => `{"jsonrpc":"2.0","id":${d},"method":"tools/list"}`,
          (d: string) =>
            `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"platform":"x","query":${d}}}}`,
          (d: string) =>
            `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":${d},"clientInfo":{"name":"t","version":"1"}}}`,
        ),
        fc.integer({ min: MAX_BODY_DEPTH + 1, max: 5000 }),
        fc.constantFrom("array", "object", "mixed" as const),
        async (message, depth, shape) => {
          const a = await post("/mcp", message(nest(depth, shape)), mcp);
          expect(a.status).toBe(400);
          expect(a.json).toEqual({
            jsonrpc: "2.0",
            error: { code: -32700, message: expect.stringContaining(`at most ${MAX_BODY_DEPTH}`) },
            id: null,
          });
        },
      ),
      { numRuns: 30 },
    );
    const listed = await post("/mcp", '{"jsonrpc":"2.0","id":1,"method":"tools/list"}', mcp);
    expect(listed.status).toBe(200);
    expect(listed.json["result"].tools.length).toBeGreaterThan(0);
    expect(balance()).toBe(before);
  });

  it("nothing was logged as a failure", () => {
    expect(failures).toEqual([]);
  });
});
