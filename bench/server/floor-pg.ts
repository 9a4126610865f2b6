/**
 * The PostgreSQL floor of bench/server (issue 36): what the database server itself commits when each transaction is
 * one charge — a balance `UPDATE` of one account and a ledger `INSERT`, committed — with no HTTP, no gateway and no
 * simulator. Spawned by run.ts with an IPC channel:
 *
 *   node bench/server/floor-pg.ts <url> <accounts> <connections>
 *
 * On its own database at <url> (run.ts makes and drops it, apart from the reference server's, so that each one's
 * `pg_stat_database.xact_commit` counts only its own) it makes `floor_accounts` (<accounts> rows) and
 * `floor_ledger`, opens <connections> connections (the pools of the instances it stands beside: 10 each) and sends
 * `{ ready: true }`. Each `{ seconds }` message is a round: every connection commits charges in a closed loop for
 * that long, the accounts taken in turn (one hot account when <accounts> is 1), and the answer is
 * `{ total, seconds, p50, p99 }` (the transactions' latencies in ms). A charge is one statement —
 * `WITH charged AS (UPDATE … RETURNING id) INSERT INTO floor_ledger SELECT …` — in one round trip and one
 * transaction: the least a charge can cost the database, the bar the reference server is measured against.
 */
import { createRequire } from "node:module";

const [url, accountsArg, connectionsArg] = process.argv.slice(2);
if (!process.send) throw new Error("floor-pg.ts must be spawned with an IPC channel (by run.ts)");
if (!url) throw new Error("floor-pg.ts <url> <accounts> <connections>: the database's URL is missing");
const accounts = Number(accountsArg);
const connections = Number(connectionsArg);
if (!Number.isInteger(accounts) || accounts < 1) throw new Error(`floor-pg.ts: <accounts> ≥ 1 (got ${accountsArg})`);
if (!Number.isInteger(connections) || connections < 1)
  throw new Error(`floor-pg.ts: <connections> ≥ 1 (got ${connectionsArg})`);
process.on("disconnect", () => process.exit(0));

interface Client {
  connect(): Promise<void>;
  query(text: string | { name: string; text: string; values: unknown[] }, values?: unknown[]): Promise<unknown>;
  end(): Promise<void>;
}
const require = createRequire(new URL("../../packages/server/package.json", import.meta.url));
const pg = require("pg") as { Client: new (o: { connectionString: string; application_name: string }) => Client };

const open = async () => {
  const c = new pg.Client({ connectionString: url, application_name: "sdgw-bench-floor" });
  await c.connect();
  return c;
};
const setup = await open();
await setup.query(
  "CREATE TABLE floor_accounts (id integer PRIMARY KEY, balance bigint NOT NULL); " +
    "CREATE TABLE floor_ledger (id bigserial PRIMARY KEY, account_id integer NOT NULL REFERENCES floor_accounts (id), " +
    "amount bigint NOT NULL, request_id text NOT NULL, created_at timestamptz NOT NULL DEFAULT now())",
);
await setup.query(
  "INSERT INTO floor_accounts (id, balance) SELECT g, 1000000000000 FROM generate_series(1, $1::integer) AS g",
  [accounts],
);
await setup.end();
const clients = await Promise.all(Array.from({ length: connections }, open));

const CHARGE =
  "WITH charged AS (UPDATE floor_accounts SET balance = balance - $2 WHERE id = $1 RETURNING id) " +
  "INSERT INTO floor_ledger (account_id, amount, request_id) SELECT id, $2, $3 FROM charged";
let n = 0;

process.on("message", async (m: { seconds: number }) => {
  const until = performance.now() + m.seconds * 1000;
  const latencies: number[] = [];
  await Promise.all(
    clients.map(async (c) => {
      while (performance.now() < until) {
        const i = n++;
        const t = performance.now();
        await c.query({ name: "charge", text: CHARGE, values: [(i % accounts) + 1, 1, `req_floor_${i}`] });
        latencies.push(performance.now() - t);
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
  process.send!({ total: latencies.length, seconds: m.seconds, p50: at(0.5), p99: at(0.99) });
});
process.send({ ready: true });
