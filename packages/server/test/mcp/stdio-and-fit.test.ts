/** The stdio binary `sdgw-mcp` through the official client, and the size rule of D30 on small bounds. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { fitAnswer, MORE_NOTE } from "../../src/mcp/index.ts";
import { createServer } from "../../src/storage/sqlite/server.ts";
import { BODIES } from "../tool-bodies.ts";
import { sdk } from "./sdk-client.ts";

const { StdioClientTransport } = (await import(
  "@modelcontextprotocol/client/stdio"
)) as typeof import("@modelcontextprotocol/client/stdio");

describe("sdgw-mcp over stdio", () => {
  it("serves the tools for SDGW_API_KEY on the database of SDGW_DB", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sdgw-mcp-"));
    try {
      const dbPath = join(dir, "sdgw.sqlite");
      const seed = createServer({ dbPath, log: () => undefined });
      const { account } = seed.gateway.accounts.createAccount({ name: "stdio", plan: "paid" });
      seed.gateway.accounts.grant(account.id, 42);
      const key = seed.gateway.accounts.createKey({ accountId: account.id, name: "stdio" }).secret;
      await seed.close();

      const bin = fileURLToPath(new URL("../../src/bin/sdgw-mcp.ts", import.meta.url));
      const transport = new StdioClientTransport({
        command: process.execPath,
        args: ["--conditions=source", bin],
        env: { SDGW_DB: dbPath, SDGW_API_KEY: key, PATH: process.env["PATH"] ?? "" },
        stderr: "pipe",
      });
      const client = new sdk.Client({ name: "sdgw-stdio-test", version: "1.0.0" });
      await client.connect(transport);
      const { tools } = await client.listTools();
      expect(tools).toHaveLength(16);
      const acct = await client.callTool({ name: "account", arguments: {} });
      expect((acct.structuredContent as { billing: { balance_credits: number } }).billing.balance_credits).toBe(42);
      await client.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe("sdgw-mcp over stdio: progress (D141)", () => {
  it("a tool run that answered 202 sends its progress as messages, from 0, in order, then its answer", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sdgw-mcp-"));
    try {
      const dbPath = join(dir, "sdgw.sqlite");
      const seed = createServer({ dbPath, log: () => undefined });
      const { account } = seed.gateway.accounts.createAccount({ name: "stdio progress", plan: "paid" });
      seed.gateway.accounts.grant(account.id, 10_000);
      const key = seed.gateway.accounts.createKey({ accountId: account.id, name: "stdio" }).secret;
      await seed.close();
      const bin = fileURLToPath(new URL("../../src/bin/sdgw-mcp.ts", import.meta.url));
      const transport = new StdioClientTransport({
        command: process.execPath,
        args: ["--conditions=source", bin],
        env: {
          SDGW_DB: dbPath,
          SDGW_API_KEY: key,
          SDGW_WAIT_MS: "1",
          SDGW_LATENCY_MS: "20",
          PATH: process.env["PATH"] ?? "",
        },
        stderr: "pipe",
      });
      const client = new sdk.Client({ name: "sdgw-stdio-progress", version: "1.0.0" });
      await client.connect(transport);
      const seen: Array<{ progress: number; total?: number; message?: string }> = [];
      const r = await client.callTool(
        { name: "brand_buzz", arguments: BODIES.brand_buzz.background },
        { onprogress: (p) => void seen.push(p) },
      );
      const s = r.structuredContent as Record<string, unknown>;
      expect(seen.length).toBeGreaterThan(0);
      expect(seen[0]!.progress).toBe(0);
      expect(seen[0]!.message).toMatch(/^brand_buzz: 0 of \d+ waves done$/);
      const total = seen[0]!.total!;
      for (const p of seen) expect(p.total).toBe(total);
      for (let i = 1; i < seen.length; i++) expect(seen[i]!.progress).toBeGreaterThan(seen[i - 1]!.progress);
      // An answer that is the finished result came after the last wave's notification; one still running after the
      // wait (a slow machine) is the running answer.
      if (s["status"] !== "running") expect(seen.at(-1)!.progress).toBe(total);
      expect(s["tool"] ?? "brand_buzz").toBe("brand_buzz");
      await client.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe("fitAnswer (D30)", () => {
  const row = (i: number) => ({ kind: "item", id: `id${i}`, text: "x".repeat(100) });
  const envelope = { request_id: "r", status: "ok", warnings: [], items: Array.from({ length: 50 }, (_, i) => row(i)) };

  it("keeps an answer that fits whole, from any position", () => {
    expect(fitAnswer(envelope, { handle: "h_a", position: 0, maxBytes: 60_000 }).answer).toEqual(envelope);
    const tail = fitAnswer(envelope, { handle: "h_a", position: 45, maxBytes: 60_000 });
    expect(tail.rows).toBe(5);
    expect(tail.answer["more"]).toBeUndefined();
  });

  it("cuts to the first rows that fit and points more at the next row", () => {
    const f = fitAnswer(envelope, { handle: "h_a", position: 10, maxBytes: 2_000 });
    const bytes = Buffer.byteLength(JSON.stringify(f.answer));
    expect(bytes).toBeLessThanOrEqual(2_000);
    expect((f.answer["items"] as Array<{ id: string }>)[0]!.id).toBe("id10");
    expect(f.answer["more"]).toEqual({ handle: `h_a.${10 + f.rows}`, rows_left: 40 - f.rows, note: MORE_NOTE });
    // One more row would not have fitted.
    const next = fitAnswer(envelope, { handle: "h_a", position: 10, maxBytes: bytes + 100 });
    expect(next.rows).toBe(f.rows);
  });

  it("without a handle drops no row (D55): the answer is whole, over the bound, and says so in warnings", () => {
    const f = fitAnswer(envelope, { handle: null, position: 0, maxBytes: 2_000 });
    expect(f.rows).toBe(50);
    expect(f.answer["items"]).toEqual(envelope.items);
    expect(f.answer["more"]).toBeUndefined();
    expect((f.answer["warnings"] as string[])[0]).toMatch(/nothing could be stored to read on from/);
  });

  it("asks a lazy handle only when the answer must be cut", () => {
    let asked = 0;
    const lazy = () => {
      asked++;
      return "h_lazy";
    };
    expect(fitAnswer(envelope, { handle: lazy, position: 0, maxBytes: 60_000 }).answer["more"]).toBeUndefined();
    expect(asked).toBe(0);
    const cut = fitAnswer(envelope, { handle: lazy, position: 0, maxBytes: 2_000 });
    expect(asked).toBe(1);
    expect((cut.answer["more"] as { handle: string }).handle).toBe(`h_lazy.${cut.rows}`);
  });

  it("with a renderer, the page's JSON and its file together hold the bound", () => {
    const render = (page: Record<string, unknown>) =>
      (page["items"] as Array<{ id: string }>).map((i) => `${i.id},${"y".repeat(100)}\n`).join("");
    const f = fitAnswer(envelope, { handle: "h_r", position: 0, maxBytes: 4_000, render });
    expect(Buffer.byteLength(JSON.stringify(f.answer)) + Buffer.byteLength(f.text!)).toBeLessThanOrEqual(4_000);
    expect(f.text).toBe(render(f.answer));
    expect(f.text!.split("\n").filter(Boolean)).toHaveLength(f.rows);
    const plain = fitAnswer(envelope, { handle: "h_r", position: 0, maxBytes: 4_000 });
    expect(plain.rows).toBeGreaterThan(f.rows);
  });

  it("cuts targets and fanout entries' items as rows", () => {
    const targets = {
      status: "ok",
      targets: Array.from({ length: 30 }, (_, i) => ({
        platform: "weibo",
        target: String(i),
        result: { items: [row(i)] },
      })),
    };
    const t = fitAnswer(targets, { handle: "h_t", position: 0, maxBytes: 3_000 });
    expect((t.answer["targets"] as unknown[]).length).toBe(t.rows);
    const fanout = {
      status: "ok",
      fanout: {
        weibo: { status: "ok", items: envelope.items.slice(0, 20) },
        x: { status: "ok", items: envelope.items.slice(20, 40) },
      },
    };
    const f = fitAnswer(fanout, { handle: "h_f", position: 15, maxBytes: 3_000 });
    const entries = f.answer["fanout"] as Record<string, { items: Array<{ id: string }> }>;
    expect(entries["weibo"]!.items[0]!.id).toBe("id15");
    expect((entries["weibo"]?.items.length ?? 0) + (entries["x"]?.items.length ?? 0)).toBe(f.rows);
    expect((f.answer["more"] as { handle: string }).handle).toBe(`h_f.${15 + f.rows}`);
  });

  it("a fanout page holds only entries valid on it (D55): ok entries with rows there, rowless ones on the first page", () => {
    const fanout = {
      status: "ok",
      fanout: {
        weibo: { status: "ok", items: envelope.items.slice(0, 10) },
        x: { status: "not_supported", items: [] },
        reddit: { status: "ok", items: envelope.items.slice(10, 20) },
        zhihu: { status: "empty", items: [] },
      },
    };
    const pages: Array<Record<string, { status: string; items: unknown[] }>> = [];
    let position = 0;
    for (;;) {
      const f = fitAnswer(fanout, { handle: "h_p", position, maxBytes: 1_500 });
      pages.push(f.answer["fanout"] as Record<string, { status: string; items: unknown[] }>);
      if (!f.answer["more"]) break;
      position += f.rows;
    }
    expect(pages.length).toBeGreaterThanOrEqual(3);
    for (const page of pages)
      for (const e of Object.values(page)) if (e.status === "ok") expect(e.items.length).toBeGreaterThan(0);
    expect(Object.keys(pages[0]!)).toEqual(expect.arrayContaining(["x", "zhihu"]));
    for (const page of pages.slice(1))
      expect(Object.keys(page).every((p) => p === "weibo" || p === "reddit")).toBe(true);
    expect(pages.flatMap((p) => Object.values(p).flatMap((e) => e.items))).toEqual(envelope.items.slice(0, 20));
  });
});
