/**
 * `sdgw-admin conformance-keys` on the shared PostgreSQL database (D108, D178): the same accounts and keys as on
 * SQLite, found by a server on that database. Needs PostgreSQL on 127.0.0.1:5432 (CI's `.ci/run` starts it).
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runAdmin } from "../src/admin.ts";
import { createPgServer, type PgServer } from "../src/index.ts";
import { pgUrl } from "./pg-helpers.ts";

const DB = `sdgw_test_admin_${process.pid}_${Date.now()}`;
let admin: pg.Client;
beforeAll(async () => {
  admin = new pg.Client({ connectionString: pgUrl("postgres"), connectionTimeoutMillis: 3000 });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${DB}`);
});
afterAll(async () => {
  await admin?.query(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`);
  await admin?.end();
});

describe("sdgw-admin conformance-keys --database-url", () => {
  it("makes the funded account and the five keys, each doing what its option of @sdgw/conformance needs", async () => {
    const keys = (await runAdmin(["conformance-keys", "--database-url", pgUrl(DB), "--credits", "30"])) as Record<
      string,
      string
    >;
    expect(Object.keys(keys).sort()).toEqual(
      ["dailyLimitKey", "insufficientBalanceKey", "key", "noscopeKey", "secondKey"].sort(),
    );
    let server: PgServer | undefined;
    try {
      server = await createPgServer({ databaseUrl: pgUrl(DB), log: () => undefined });
      const call = async (key: string, url: string) => {
        const res = await server!.app.inject({
          method: "GET",
          url,
          headers: { "x-api-key": key, "idempotency-key": `pg-ck-${Math.random()}` },
        });
        return { status: res.statusCode, body: JSON.parse(res.body) as Record<string, any> };
      };
      expect((await call(keys["key"]!, "/v1/account")).body["billing"]).toMatchObject({ balance_credits: 30 });
      expect((await call(keys["secondKey"]!, "/v1/search?platform=x&query=a")).status).toBe(200);
      expect((await call(keys["noscopeKey"]!, "/v1/search?platform=x&query=a")).body["code"]).toBe("key_scope_denied");
      expect((await call(keys["insufficientBalanceKey"]!, "/v1/search?platform=x&query=a")).body["code"]).toBe(
        "insufficient_balance",
      );
      expect((await call(keys["dailyLimitKey"]!, "/v1/search?platform=x&query=a")).body["code"]).toBe(
        "daily_limit_reached",
      );
    } finally {
      await server?.close();
    }
  }, 60_000);
});
