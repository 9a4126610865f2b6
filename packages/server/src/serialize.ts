/**
 * Serializing finished answers as UTF-8 bytes, the server's hot path: the items of a provider outcome never change
 * once made, so their JSON is written once and copied into every answer that carries them.
 */
import { randomBytes } from "node:crypto";
import type { Item } from "@sdgw/types";
import type { Entry } from "@sdgw/engine";

// Serializing answers: the items of a provider outcome never change once made, so their JSON is written once, as
// UTF-8 bytes, and copied into every answer that carries them (most of an answer's bytes), instead of stringified
// and encoded per request. The answer leaves as bytes: stored (idempotency record, handle) and sent without being
// encoded again.
const ITEMS_BYTES = new WeakMap<readonly Item[], Buffer>();
const NONCE = randomBytes(9).toString("base64url");
const TOKEN = new RegExp(`"\\\\u0000${NONCE}(\\d+)\\\\u0000"`, "g");

function itemsBytes(items: readonly Item[]): Buffer {
  let bytes = ITEMS_BYTES.get(items);
  if (bytes === undefined) {
    bytes = Buffer.from(JSON.stringify(items));
    if (items.length > 0) ITEMS_BYTES.set(items, bytes);
  }
  return bytes;
}

/** `JSON.stringify` of a finished answer as UTF-8 bytes, the items of each entry copied from their cached bytes. */
export function serializeAnswer(body: Record<string, unknown>): Buffer {
  const spliced: Buffer[] = [];
  const token = (items: Item[]): string => {
    spliced.push(itemsBytes(items));
    return `\u0000${NONCE}${spliced.length - 1}\u0000`;
  };
  const entry = (e: Entry): Entry =>
    e.items.length > 0 ? ({ ...e, items: token(e.items) as unknown as Item[] } as Entry) : e;
  let shallow: Record<string, unknown> = body;
  if (Array.isArray(body["items"]) && (body["items"] as Item[]).length > 0)
    shallow = { ...body, items: token(body["items"] as Item[]) };
  else if (body["fanout"])
    shallow = {
      ...body,
      fanout: Object.fromEntries(
        Object.entries(body["fanout"] as Record<string, Entry>).map(([p, e]) => [p, entry(e)]),
      ),
    };
  else if (Array.isArray(body["targets"]))
    shallow = {
      ...body,
      targets: (body["targets"] as Array<{ result: Entry }>).map((c) => ({ ...c, result: entry(c.result) })),
    };
  const text = JSON.stringify(shallow);
  if (spliced.length === 0) return Buffer.from(text);
  const parts: Buffer[] = [];
  let at = 0;
  let length = 0;
  const add = (part: Buffer) => {
    parts.push(part);
    length += part.length;
  };
  for (const m of text.matchAll(TOKEN)) {
    add(Buffer.from(text.slice(at, m.index)));
    add(spliced[Number(m[1])]!);
    at = m.index + m[0].length;
  }
  add(Buffer.from(text.slice(at)));
  const out = slab(length);
  let offset = 0;
  for (const part of parts) offset += part.copy(out, offset);
  return out;
}

// Answers are carved from 1 MiB slabs, as Node pools small buffers: one allocation for a hundred answers instead of
// one each (an answer of 8 KiB is past Node's own pool). A slab is freed when no answer cut from it is referenced.
const SLAB_SIZE = 1 << 20;
let slabBytes = Buffer.allocUnsafeSlow(0);
let slabAt = 0;

function slab(length: number): Buffer {
  if (length > SLAB_SIZE / 8) return Buffer.allocUnsafeSlow(length);
  if (slabAt + length > slabBytes.length) {
    slabBytes = Buffer.allocUnsafeSlow(SLAB_SIZE);
    slabAt = 0;
  }
  const out = slabBytes.subarray(slabAt, slabAt + length);
  slabAt += (length + 7) & ~7;
  return out;
}
