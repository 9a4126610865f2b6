/**
 * What the guides' fresh projects (`fresh-projects.test.ts`, where every guide's programs run, from `npm init -y`)
 * do not do: every program of `docs/guides/` and every TypeScript example of the package READMEs, saved in ONE
 * project on Node 24 that installed every package from the registry, type-checked strictly (`skipLibCheck:
 * false`); and the guides' MCP host configurations, connected to as a host would, against a reference server
 * started from this checkout as the guide says (`pnpm start`, with the guide's `SDGW_*` settings, on a new
 * database and a free port). See `docs/guide-blocks.ts` for the comments that say how a block runs.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { parseGuide, type GuideBlock } from "../../docs/guide-blocks.ts";
import { ROOT } from "../src/generate.ts";
import { consumerProject, workspacePackages, type ConsumerProject } from "./harness.ts";
import { startServer, type Started } from "./reference-server.ts";

const registryUrl = inject("registryUrl");
const root = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
  devDependencies: Record<string, string>;
};
const pin = (name: string) => `${name}@${root.devDependencies[name]}`;
const GUIDES = join(ROOT, "docs", "guides");
const guides = readdirSync(GUIDES)
  .filter((f) => f.endsWith(".md"))
  .sort()
  .map((f) => parseGuide(`docs/guides/${f}`, readFileSync(join(GUIDES, f), "utf8")));

let project: ConsumerProject;
const scratch = mkdtempSync(join(tmpdir(), "sdgw-guides-"));
afterAll(() => {
  project?.remove();
  rmSync(scratch, { recursive: true, force: true });
});

beforeAll(async () => {
  project = consumerProject(registryUrl, 24, { type: "module" });
  // What the guides tell their readers to install: the packages, msw for the mock, the MCP client; and the tools
  // a TypeScript project has.
  const peers = workspacePackages().flatMap((p) =>
    Object.entries(p.peerDependencies)
      .filter(([n]) => n === "msw")
      .map(([n, r]) => `${n}@${r}`),
  );
  await project.install([
    ...workspacePackages().map((p) => p.name),
    ...new Set(peers),
    pin("@modelcontextprotocol/client"),
  ]);
  await project.install([pin("typescript"), pin("@types/node"), pin("vitest")], { dev: true });
  for (const guide of guides) for (const block of programs(guide)) project.write(block.file!, block.code);
  for (const { file, code } of readmeExamples) project.write(file, code);
});

/**
 * A guide's programs (its `node` and `vitest` blocks). Its `setup` and `file` blocks make a fresh project, which
 * this shared one is not: fresh-projects.test.ts runs them, from `npm init -y`, on Node 20 and 24.
 */
function programs(guide: { blocks: GuideBlock[] }): GuideBlock[] {
  return guide.blocks.filter((b) => (b.run === "node" || b.run === "vitest") && b.file);
}

/**
 * The TypeScript examples of the package READMEs (their pages on the npm registry), as files of the same project:
 * they are not run (they need a server, a browser or a test runner), but a reader who pastes one gets a program
 * that compiles. `export {}` makes each a module, as a reader's file with top-level `await` is.
 */
const readmeExamples = readdirSync(join(ROOT, "packages")).flatMap((dir) => {
  let readme: string;
  try {
    readme = readFileSync(join(ROOT, "packages", dir, "README.md"), "utf8");
  } catch {
    return [];
  }
  return [...readme.matchAll(/^```ts\n([\s\S]*?)^```/gm)].map((m, i) => ({
    file: `readme-${dir}-${i + 1}.ts`,
    code: `${m[1]}\nexport {};\n`,
  }));
});

it("every guide's and package README's TypeScript compiles strictly against the published packages (skipLibCheck false)", async () => {
  const files = [...guides.flatMap((g) => programs(g).map((b) => b.file!)), ...readmeExamples.map((e) => e.file)];
  expect(files.length).toBeGreaterThan(5);
  expect(readmeExamples.length, "the package READMEs' TypeScript examples").toBeGreaterThanOrEqual(10);
  project.write(
    "tsconfig.json",
    JSON.stringify({
      compilerOptions: {
        strict: true,
        skipLibCheck: false,
        noEmit: true,
        target: "ES2022",
        module: "nodenext",
        moduleResolution: "nodenext",
        types: ["node"],
        noUncheckedIndexedAccess: true,
      },
      files,
    }),
  );
  const tsc = await project.exec("node", [join("node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.json"]);
  expect(tsc.stdout, "tsc over the guides' programs").toBe("");
  expect(tsc.code).toBe(0);
});

/** Connects to every server of an MCP host configuration as a host would, and lists its tools. */
async function connectHosts(block: GuideBlock, server: Started): Promise<string> {
  const config = JSON.parse(block.code) as {
    mcpServers: Record<
      string,
      {
        type?: string;
        url?: string;
        headers?: Record<string, string>;
        command?: string;
        args?: string[];
        env?: Record<string, string>;
      }
    >;
  };
  const entries = Object.entries(config.mcpServers);
  expect(entries.length, block.where).toBeGreaterThan(0);
  const lines: string[] = [];
  // The reader puts in their key, their server's address and their checkout's path.
  const fill = (s: string) => s.replaceAll("sdgw_…", server.key).replaceAll("/path/to/repo", ROOT.replace(/\/$/, ""));
  for (const [name, entry] of entries) {
    const client = new Client({ name: "guide-host", version: "1.0.0" });
    if (entry.url) {
      const url = new URL(entry.url);
      const actual = new URL(url.pathname, server.url);
      const headers = Object.fromEntries(Object.entries(entry.headers ?? {}).map(([k, v]) => [k, fill(v)]));
      await client.connect(new StreamableHTTPClientTransport(actual, { requestInit: { headers } }));
    } else {
      expect(entry.command, `${block.where}: ${name} has neither url nor command`).toBeDefined();
      // The stdio server gets a database of its own: two processes on one database file is not what this shows.
      const env = Object.fromEntries(
        Object.entries(entry.env ?? {}).map(([k, v]) => [
          k,
          k === "SDGW_DB" ? join(mkdtempSync(join(scratch, "mcp-")), "sdgw.sqlite") : fill(v),
        ]),
      );
      const command = entry.command === "node" ? process.execPath : entry.command!;
      await client.connect(
        new StdioClientTransport({
          command,
          args: (entry.args ?? []).map(fill),
          env: { PATH: process.env["PATH"] ?? "", ...env },
          stderr: "ignore",
        }),
      );
    }
    const { tools } = await client.listTools();
    lines.push(`${name}: ${tools.length} tools`);
    await client.close();
  }
  return lines.join("\n");
}

/** The guides with MCP host configurations; their programs run in fresh-projects.test.ts. */
const hosted = guides.filter((g) => g.blocks.some((b) => b.run === "mcp-config"));

it("the MCP guide has host configurations to connect to", () => {
  expect(hosted.map((g) => g.name)).toContain("docs/guides/mcp.md");
});

describe.each(hosted.map((g) => [g.name, g] as const))("%s", (_name, guide) => {
  let server: Started;
  beforeAll(async () => {
    server = await startServer(guide.serverEnv, scratch);
  });
  afterAll(() => server?.stop());

  for (const block of guide.blocks.filter((b) => b.run === "mcp-config")) {
    it(`${block.where}: a host connects to every server it configures and lists 16 tools`, async () => {
      const printed = await connectHosts(block, server);
      for (const line of printed.split("\n")) expect(line).toMatch(/: 16 tools$/);
    });
  }
});
