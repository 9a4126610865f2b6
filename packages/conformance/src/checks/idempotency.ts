/** `Idempotency-Key` on `GET /v1/search` (seed Idempotency table; D15, D35, D39). */
import { exchangeLine } from "../http.ts";
import type { Check, CheckContext } from "../types.ts";
import { balanceOf, expectRefusal, fail, firstDifference, na, pass, refusal, refusalKey, sameJson } from "./util.ts";

/** A unique Idempotency-Key of exactly `length` printable ASCII characters (0x21–0x7E), every one of them used. */
export function printableKey(length: number): string {
  const unique = `${crypto.randomUUID()}-`;
  let out = unique;
  for (let i = 0; out.length < length; i++) out += String.fromCharCode(0x21 + (i % 94));
  return out.slice(0, length);
}

const params = (ctx: CheckContext, query: string, extra: Record<string, string | number> = {}) => ({
  platform: ctx.options.platform,
  query,
  count: 2,
  ...extra,
});

export const idempotencyChecks: Check[] = [
  {
    id: "idempotency.required",
    title: "GET /v1/search without Idempotency-Key → 400 invalid_params naming it",
    run: (ctx) =>
      expectRefusal(
        ctx,
        {
          path: "/v1/search",
          query: params(ctx, "conformance no idempotency key"),
          idempotencyKey: null,
          key: refusalKey(ctx),
        },
        {
          status: 400,
          code: "invalid_params",
          param: ["Idempotency-Key"],
          rule: "seed GET /v1/search: the idempotency-key header is required",
        },
      ),
  },
  {
    id: "idempotency.key-255",
    title: "an Idempotency-Key of 255 printable characters is accepted (D15)",
    async run(ctx) {
      const x = await ctx.http.send({
        path: "/v1/search",
        query: params(ctx, "conformance long key"),
        idempotencyKey: printableKey(255),
      });
      return x.status === 200 || x.status === 202
        ? pass(`HTTP ${x.status}`)
        : fail(
            `${exchangeLine(x)}; expected HTTP 200 or 202 (seed: a test must accept the shorter ` +
              `bound, 1 to 255 printable ASCII characters, as certainly valid; D15)`,
          );
    },
  },
  {
    id: "idempotency.key-513",
    title: "an Idempotency-Key of 513 characters → 400 invalid_params naming it (D15)",
    run: (ctx) =>
      expectRefusal(
        ctx,
        {
          path: "/v1/search",
          query: params(ctx, "conformance too long key"),
          idempotencyKey: printableKey(513),
          key: refusalKey(ctx),
        },
        {
          status: 400,
          code: "invalid_params",
          param: ["Idempotency-Key"],
          rule: "D15: more than 512 characters is invalid under both of the seed's bounds (invalid_params case 9)",
        },
      ),
  },
  {
    id: "idempotency.replay",
    title:
      "same key and parameters after the call ended → the same answer, Idempotent-Replayed: true, balance unchanged (D35)",
    async run(ctx) {
      const key = ctx.http.newIdempotencyKey("replay");
      const first = await ctx.http.send({
        path: "/v1/search",
        query: params(ctx, "conformance replay"),
        idempotencyKey: key,
      });
      if (first.status === 202)
        return na(
          `${exchangeLine(first, 120)}: the call ran in the background; the replay of a run is checked by idempotency.replay-after-run`,
        );
      if (first.status !== 200) return fail(`${exchangeLine(first)}; expected HTTP 200 for a plain call`);
      const before = await balanceOf(ctx);
      if (!before.ok) return before.verdict;
      const again = await ctx.http.send({
        path: "/v1/search",
        query: params(ctx, "conformance replay"),
        idempotencyKey: key,
      });
      const after = await balanceOf(ctx);
      if (!after.ok) return after.verdict;
      const rule =
        "seed Idempotency: same key and parameters after the run has ended → the first result " +
        "again, cost 0; D35: unchanged, with Idempotent-Replayed: true, and the balance does not move";
      if (after.balance !== before.balance)
        return fail(
          `the replay ${exchangeLine(again, 160)} charged again: the balance went ${before.balance} → ${after.balance} (${rule})`,
        );
      if (again.status !== first.status)
        return fail(`first HTTP ${first.status}, replay ${exchangeLine(again)} (${rule})`);
      if (!sameJson(first.json, again.json))
        return fail(`the replay differs from the first answer at ${firstDifference(first.json, again.json)} (${rule})`);
      if (again.headers.get("idempotent-replayed") !== "true")
        return fail(
          `the replay came without the header Idempotent-Replayed: true (got ${JSON.stringify(again.headers.get("idempotent-replayed"))}; D35)`,
        );
      return pass(`identical answer, Idempotent-Replayed: true, balance ${after.balance} unchanged`);
    },
  },
  {
    id: "idempotency.conflict",
    title: "same key with other parameters → 422 idempotency_conflict",
    async run(ctx) {
      const key = ctx.http.newIdempotencyKey("conflict");
      const first = await ctx.http.send({
        path: "/v1/search",
        query: params(ctx, "conformance conflict"),
        idempotencyKey: key,
      });
      if (first.status !== 200 && first.status !== 202)
        return fail(`${exchangeLine(first)}; expected HTTP 200 or 202 for a plain call`);
      const other = await ctx.http.send({
        path: "/v1/search",
        query: params(ctx, "conformance conflict", { count: 3 }),
        idempotencyKey: key,
      });
      return (
        refusal(other, {
          status: 422,
          code: "idempotency_conflict",
          rule: "seed Idempotency: same key with other parameters → HTTP 422 idempotency_conflict",
        }) ?? pass("HTTP 422 idempotency_conflict")
      );
    },
  },
];
