/**
 * The items the mock answers with, taken from the fixtures: for each operation, the items of its `ok` fixtures
 * (envelopes, fanout entries, target cells, 202 cells and tool answers), with the platform they came from.
 */
import type { Item, OperationId } from "@sdgw/types";
import { FIXTURES, ROUTES } from "./generated/routes.ts";
import { clone, isObject } from "./util.ts";

/** Items of one platform's result in a fixture. */
interface Source {
  platform: string | null;
  items: Item[];
}

/** Operations that answer the same items (GET and POST search). */
const FAMILY: Partial<Record<OperationId, OperationId[]>> = {
  search: ["search", "searchPost"],
  searchPost: ["searchPost", "search"],
};

/**
 * Operations without an `ok` fixture of their own borrow another's items, keeping only the kinds they answer
 * (D9): viral_finder ranks posts (`leaderboard`) and shows them (`item`).
 */
const BORROW: Partial<Record<OperationId, { from: OperationId[]; kinds: Item["kind"][] }>> = {
  viralFinder: { from: ["brandBuzz", "search"], kinds: ["leaderboard", "item"] },
};

function sourcesOf(body: unknown): Source[] {
  if (!isObject(body)) return [];
  const out: Source[] = [];
  const push = (platform: unknown, result: unknown) => {
    if (isObject(result) && result["status"] === "ok" && Array.isArray(result["items"]) && result["items"].length > 0) {
      out.push({ platform: typeof platform === "string" ? platform : null, items: result["items"] as Item[] });
    }
  };
  if (isObject(body["fanout"])) for (const [p, entry] of Object.entries(body["fanout"])) push(p, entry);
  if (Array.isArray(body["targets"])) for (const c of body["targets"]) if (isObject(c)) push(c["platform"], c["result"]);
  if (Array.isArray(body["cells"])) for (const c of body["cells"]) if (isObject(c)) push(c["platform"], c["result"]);
  if (Array.isArray(body["items"])) push(body["platform"] ?? null, body);
  return out;
}

const cache = new Map<OperationId, Source[]>();

/** Every source of items of an operation (its family's `ok` fixtures, then any 202 cells). */
function sources(op: OperationId): Source[] {
  let found = cache.get(op);
  if (found) return found;
  const ops = FAMILY[op] ?? [op];
  found = ops.flatMap((o) =>
    ROUTES[o].fixtures.filter((f) => f.mediaType === "application/json" && (f.status === "ok" || f.status === "running")).flatMap((f) => sourcesOf(FIXTURES[f.file])),
  );
  const borrow = BORROW[op];
  if (found.length === 0 && borrow) {
    found = borrow.from.flatMap((o) => sources(o)).map((s) => ({ platform: s.platform, items: s.items.filter((i) => borrow.kinds.includes(i.kind)) }));
    found = found.filter((s) => s.items.length > 0);
  }
  cache.set(op, found);
  return found;
}

/**
 * Items for one platform's answer of an operation, at most `count`, of the kinds asked (all by default): the
 * fixture of that platform when there is one, else the operation's first fixture, else any fixture with items of
 * those kinds. Always at least one item. Copies: callers may change them.
 */
export function itemsFor(op: OperationId, platform: string | null, count: number, kinds?: readonly Item["kind"][]): Item[] {
  const keep = (s: Source): Source => ({ platform: s.platform, items: kinds ? s.items.filter((i) => kinds.includes(i.kind)) : s.items });
  const own = sources(op).map(keep).filter((s) => s.items.length > 0);
  let pick = own.find((s) => s.platform === platform) ?? own[0];
  if (!pick) {
    const any = (Object.keys(ROUTES) as OperationId[]).flatMap((o) => sources(o)).map(keep).filter((s) => s.items.length > 0);
    pick = any.find((s) => s.platform === platform) ?? any[0];
  }
  if (!pick) throw new Error(`@sdgw/mock: no fixture has items of kind ${kinds?.join(", ") ?? "any"} for ${op}`);
  return clone(pick.items.slice(0, Math.max(1, count)));
}
