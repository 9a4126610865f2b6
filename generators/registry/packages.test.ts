/**
 * Each package installed ALONE from the registry, as its README says (`npm install @sdgw/x`, plus the peers it
 * requires), into a fresh project, on every Node from 20, 22 and 24 that its `engines` allows: it imports under
 * ESM and (where it ships CommonJS) requires, and does one real thing; its bins run. On Node 24, a strict
 * TypeScript program (node16 and bundler resolution, `skipLibCheck: false`) that uses its types compiles, and one
 * that reads a field the type does not have fails with TS2339 — so types that silently became `any` are caught.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, inject, it } from "vitest";
import { ROOT } from "../src/generate.ts";
import {
  consumerProject,
  nodeAllows,
  workspacePackages,
  type ConsumerProject,
  type WorkspacePackage,
} from "./harness.ts";

const registryUrl = inject("registryUrl");
const NODES = [20, 22, 24] as const;
const root = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
  devDependencies: Record<string, string>;
};
/** The TypeScript and Node types a TS user adds, at the versions this workspace builds with. */
const TS_DEV = [
  `typescript@${root.devDependencies["typescript"]}`,
  `@types/node@${root.devDependencies["@types/node"]}`,
];

/** What one package must do once installed: programs printing one line, and a typed use of its API. */
interface Probe {
  /** An ES module program. */
  esm: string;
  /** The same under CommonJS (packages that ship it). */
  cjs?: string;
  /** The line both print. */
  prints: RegExp;
  /** Bins to run: `[name, args, what stdout must match]`. */
  bins?: [string, string[], RegExp][];
  /** A TypeScript module that uses the package's types. */
  ts: string;
  /** The same with one read of a field that does not exist (must not compile). */
  tsWrong: string;
}

const ERROR_SERVER =
  `
const http = require("node:http");
const server = http.createServer((req, res) => {
  res.writeHead(401, { "content-type": "application/json" });
  res.end(JSON.stringify({ request_id: "req_probe", schema_version: "v1", code: "unauthorized", ` +
  `message: "The key is not valid.", retryable: false, fix: { action_url: "https://example.test/keys" } }));
});`;

const PROBES: Record<string, Probe> = {
  "@sdgw/types": {
    esm:
      `import { PLATFORMS, ERROR_CODES, ERROR_CATALOGUE } from "@sdgw/types";\n` +
      `console.log(PLATFORMS.length, ERROR_CODES.length, ERROR_CATALOGUE.invalid_params.http[0]);`,
    cjs:
      `const { PLATFORMS, ERROR_CODES, ERROR_CATALOGUE } = require("@sdgw/types");\n` +
      `console.log(PLATFORMS.length, ERROR_CODES.length, ERROR_CATALOGUE.invalid_params.http[0]);`,
    prints: /^10 19 400$/,
    ts:
      `import type { SearchEnvelope } from "@sdgw/types";\nexport const first = (e: ` +
      `SearchEnvelope): string => (e.status === "ok" ? e.items[0]!.kind : e.status);\n`,
    tsWrong: `import type { SearchEnvelope } from "@sdgw/types";\nexport const wrong = (e: SearchEnvelope) => e.no_such_field;\n`,
  },
  "@sdgw/validators": {
    esm:
      `import { validateSearchQuery, parseQuery, OPERATIONS } from "@sdgw/validators";\nconst q ` +
      `= validateSearchQuery(parseQuery(OPERATIONS.search, "platform=x&query=a&count=21"));\n` +
      `console.log(q.ok, q.invalid.param, q.answer("req_1").code);`,
    cjs:
      `const { validateSearchQuery, parseQuery, OPERATIONS } = require("@sdgw/validators");\n` +
      `const q = validateSearchQuery(parseQuery(OPERATIONS.search, "platform=x&query=a&count=21"));\n` +
      `console.log(q.ok, q.invalid.param, q.answer("req_1").code);`,
    prints: /^false count invalid_params$/,
    ts:
      `import { validateSearchEnvelope } from "@sdgw/validators";\nexport function id(body: ` +
      `unknown): string | undefined {\n  const r = validateSearchEnvelope(body);\n  return r.ok ? ` +
      `r.value.request_id : r.errors[0]?.path;\n}\n`,
    tsWrong:
      `import { validateSearchEnvelope } from "@sdgw/validators";\nexport function id(body: ` +
      `unknown) {\n  const r = validateSearchEnvelope(body);\n  return r.ok ? ` +
      `r.value.no_such_field : undefined;\n}\n`,
  },
  "@sdgw/engine": {
    esm:
      `import { Catalog, Simulator, planPlatforms } from "@sdgw/engine";\nconst sim = new ` +
      `Simulator({ anchor: "2026-11-20T00:00:00Z" });\nconst catalog = new Catalog(sim.providers);\n` +
      `const planned = planPlatforms(catalog, "search", { platforms: ["x", "reddit"], query: "probe" }, ` +
      `"search");\nconsole.log(catalog.operations.length > 60, planned.ok && planned.plan.calls.length);`,
    cjs:
      `const { Catalog, Simulator } = require("@sdgw/engine");\nconst { TOOLS } = ` +
      `require("@sdgw/engine/tools");\nconst catalog = new Catalog(new Simulator().providers);\n` +
      `console.log(catalog.operations.length > 60, Object.keys(TOOLS).length);`,
    prints: /^true [27]$/,
    ts:
      `import { Catalog, Simulator, type CallPlan } from "@sdgw/engine";\nexport const ops: ` +
      `number = new Catalog(new Simulator().providers).operations.length;\nexport const shape = (p: ` +
      `CallPlan): string => p.shape;\n`,
    tsWrong: `import { Catalog, Simulator } from "@sdgw/engine";\nexport const wrong = new Catalog(new Simulator().providers).no_such_field;\n`,
  },
  "@sdgw/client": {
    esm:
      `import { createRequire } from "node:module";\nconst require = ` +
      `createRequire(import.meta.url);\n${ERROR_SERVER}\nimport { createClient, isSdgwError } from ` +
      `"@sdgw/client";\nserver.listen(0, "127.0.0.1", async () => {\n  const sdgw = createClient({ ` +
      `baseUrl: "http://127.0.0.1:" + server.address().port, apiKey: "sdgw_probe" });\n  try { await ` +
      `sdgw.account(); console.log("no error"); } catch (e) { console.log(isSdgwError(e, ` +
      `"unauthorized"), e.status, e.request_id); }\n  server.close();\n});`,
    cjs:
      `${ERROR_SERVER}\nconst { createClient, isSdgwError } = require("@sdgw/client");\n` +
      `server.listen(0, "127.0.0.1", async () => {\n  const sdgw = createClient({ baseUrl: ` +
      `"http://127.0.0.1:" + server.address().port, apiKey: "sdgw_probe" });\n  try { await ` +
      `sdgw.account(); console.log("no error"); } catch (e) { console.log(isSdgwError(e, ` +
      `"unauthorized"), e.status, e.request_id); }\n  server.close();\n});`,
    prints: /^true 401 req_probe$/,
    ts:
      `import { createClient, isSdgwError } from "@sdgw/client";\nconst sdgw = createClient({ ` +
      `baseUrl: "http://127.0.0.1:8787", apiKey: "k" });\nexport async function kinds(): ` +
      `Promise<string[]> {\n  try {\n    const a = await sdgw.search({ platform: "x", query: "q" });\n   ` +
      ` return a.status === "ok" ? a.items.map((i) => i.kind) : [a.status];\n  } catch (e) {\n    if ` +
      `(isSdgwError(e, "max_cost_exceeded")) return [String(e.quote_credits)];\n    throw e;\n  }\n}\n`,
    tsWrong:
      `import { createClient } from "@sdgw/client";\nconst sdgw = createClient({ baseUrl: ` +
      `"http://127.0.0.1:8787", apiKey: "k" });\nexport async function wrong() {\n  const a = await ` +
      `sdgw.search({ platform: "x", query: "q" });\n  return a.no_such_field;\n}\n`,
  },
  "@sdgw/mock": {
    esm:
      `import { setupServer } from "msw/node";\nimport { createMock } from "@sdgw/mock";\nconst ` +
      `mock = createMock({ baseUrl: "http://127.0.0.1:8787" });\nconst server = ` +
      `setupServer(...mock.handlers);\nserver.listen({ onUnhandledFrame: "error" });\nconst r = await ` +
      `fetch("http://127.0.0.1:8787/v1/search?platform=x&query=probe", { headers: { "X-API-Key": ` +
      `"sdgw_test_key", "Idempotency-Key": "probe-1" } });\nconst body = await r.json();\n` +
      `console.log(r.status, body.status, body.items.length > 0);\nserver.close();`,
    prints: /^200 ok true$/,
    ts:
      `import { createMock, scenario } from "@sdgw/mock";\nimport type { HttpHandler } from ` +
      `"msw";\nconst mock = createMock({ baseUrl: "http://127.0.0.1:8787" });\n` +
      `mock.use(scenario("rate_limited", { times: 1 }));\nexport const handlers: HttpHandler[] = mock.handlers;\n`,
    tsWrong: `import { createMock } from "@sdgw/mock";\nexport const wrong = createMock({ baseUrl: "http://127.0.0.1:8787" }).no_such_field;\n`,
  },
  "@sdgw/conformance": {
    esm: `import { CHECKS } from "@sdgw/conformance";\nconsole.log(CHECKS.length > 40, CHECKS.every((c) => typeof c.run === "function"));`,
    cjs: `const { CHECKS } = require("@sdgw/conformance");\nconsole.log(CHECKS.length > 40, CHECKS.every((c) => typeof c.run === "function"));`,
    prints: /^true true$/,
    bins: [["sdgw-conformance", ["--list"], /^auth\.x-api-key\b/m]],
    ts:
      `import { runConformance, formatReport } from "@sdgw/conformance";\nexport async function ` +
      `failed(): Promise<number> {\n  const report = await runConformance({ baseUrl: ` +
      `"http://127.0.0.1:8787", key: "k" });\n  formatReport(report);\n  return report.failed;\n}\n`,
    tsWrong:
      `import { runConformance } from "@sdgw/conformance";\nexport async function wrong() {\n` +
      `  return (await runConformance({ baseUrl: "http://127.0.0.1:8787", key: "k" })).no_such_field;\n}\n`,
  },
  "@sdgw/server": {
    esm:
      `import { createServer } from "@sdgw/server";\nconst s = createServer({ dbPath: ` +
      `"./probe.sqlite" });\nconst r = await s.app.inject({ method: "GET", url: "/v1/capabilities" });\n` +
      `console.log(r.statusCode, JSON.parse(r.body).request_id.startsWith("req_"));\nawait s.close();`,
    cjs:
      `const { createServer } = require("@sdgw/server");\n(async () => {\n  const s = ` +
      `createServer({ dbPath: "./probe-cjs.sqlite" });\n  const r = await s.app.inject({ method: "GET", ` +
      `url: "/v1/capabilities" });\n  console.log(r.statusCode, ` +
      `JSON.parse(r.body).request_id.startsWith("req_"));\n  await s.close();\n})();`,
    prints: /^200 true$/,
    bins: [["sdgw-admin", ["--help"], /create-account/]],
    ts:
      `import { createServer } from "@sdgw/server";\nconst server = createServer({ dbPath: ` +
      `"./data.sqlite" });\nconst { account } = server.gateway.accounts.createAccount({ name: "Acme", ` +
      `plan: "paid" });\nexport const id: string = account.id;\n`,
    tsWrong: `import { createServer } from "@sdgw/server";\nexport const wrong = createServer({ dbPath: "./data.sqlite" }).gateway.no_such_field;\n`,
  },
};

const TSCONFIG = (resolution: "node16" | "bundler", files: string[]) =>
  JSON.stringify({
    compilerOptions: {
      strict: true,
      skipLibCheck: false,
      noEmit: true,
      target: "ES2022",
      module: resolution === "node16" ? "node16" : "esnext",
      moduleResolution: resolution,
      types: ["node"],
    },
    files,
  });

const packages = workspacePackages();
const projects: ConsumerProject[] = [];
afterAll(() => {
  for (const p of projects) p.remove();
});

it("probes every published package", () => {
  expect(packages.map((p) => p.name).sort()).toEqual(Object.keys(PROBES).sort());
});

/** The specs a README tells users to install: the package and its required peers. */
const installSpecs = (p: WorkspacePackage) => [
  p.name,
  ...Object.entries(p.peerDependencies)
    .filter(([n]) => !p.optionalPeers.includes(n))
    .map(([n, range]) => `${n}@${range}`),
];

describe.concurrent.each(packages.map((p) => [p.name, p] as const))(
  "%s installed alone from the registry",
  (name, p) => {
    const probe = PROBES[name]!;
    const nodes = NODES.filter((n) => nodeAllows(p, n));

    it.each(nodes)(
      `on Node %i: npm install, ESM import${p.cjs ? ", CommonJS require" : ""}${probe.bins ? ", bins" : ""}`,
      async (node) => {
        const project = consumerProject(registryUrl, node);
        projects.push(project);
        await project.install(installSpecs(p));
        const installed = JSON.parse(
          readFileSync(join(project.dir, "node_modules", ...name.split("/"), "package.json"), "utf8"),
        ) as { version: string };
        expect(installed.version).toBe(p.version);
        const version = await project.exec("node", ["--version"]);
        expect(version.stdout.trim()).toMatch(new RegExp(`^v${node}\\.`));

        project.write("probe.mjs", probe.esm);
        const esm = await project.exec("node", ["probe.mjs"]);
        expect(esm.stdout.trim(), `ESM on Node ${node}: ${esm.stderr}`).toMatch(probe.prints);
        if (p.cjs) {
          project.write("probe.cjs", probe.cjs!);
          const cjs = await project.exec("node", ["probe.cjs"]);
          expect(cjs.stdout.trim(), `CommonJS on Node ${node}: ${cjs.stderr}`).toMatch(probe.prints);
        }
        for (const [bin, args, out] of probe.bins ?? []) {
          const ran = await project.exec(join("node_modules", ".bin", bin), args);
          expect(ran.code, `${bin} ${args.join(" ")}: ${ran.stderr}`).toBe(0);
          expect(ran.stdout).toMatch(out);
        }
      },
    );

    it("type-checks strictly on Node 24 (node16 and bundler resolution, skipLibCheck false); a wrong field fails", async () => {
      const project = consumerProject(registryUrl, 24, { type: "module" });
      projects.push(project);
      await project.install(installSpecs(p));
      await project.install(TS_DEV, { dev: true });
      project.write("src/use.ts", probe.ts);
      project.write("wrong/use.ts", probe.tsWrong);
      const tsc = (config: string) =>
        project.exec("node", [join("node_modules", "typescript", "bin", "tsc"), "-p", config]);
      for (const resolution of ["node16", "bundler"] as const) {
        project.write(`tsconfig.${resolution}.json`, TSCONFIG(resolution, ["src/use.ts"]));
        project.write(`tsconfig.${resolution}.wrong.json`, TSCONFIG(resolution, ["wrong/use.ts"]));
        const right = await tsc(`tsconfig.${resolution}.json`);
        expect(right.stdout, `strict tsc, ${resolution}`).toBe("");
        expect(right.code).toBe(0);
        const wrong = await tsc(`tsconfig.${resolution}.wrong.json`);
        expect(wrong.code, `a read of a missing field compiles under ${resolution}: the types are any`).not.toBe(0);
        // The one error is the missing field: not a module that cannot be found (TS2307) or any other.
        const errors = [...wrong.stdout.matchAll(/error (TS\d+)/g)].map((m) => m[1]);
        expect(errors, wrong.stdout).toEqual(["TS2339"]);
      }
      if (p.cjs) {
        // A CommonJS TypeScript program (node16 resolution, `require` condition) sees the same types.
        project.write("cjs/package.json", JSON.stringify({ type: "commonjs" }));
        project.write("cjs/use.ts", probe.ts);
        project.write("tsconfig.cjs.json", TSCONFIG("node16", ["cjs/use.ts"]));
        const cjs = await tsc("tsconfig.cjs.json");
        expect(cjs.stdout, "strict tsc, CommonJS").toBe("");
        expect(cjs.code).toBe(0);
      }
    });
  },
);
