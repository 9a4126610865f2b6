/**
 * The packages as their users get them: packed exactly as `pnpm publish` packs them (workspace ranges rewritten),
 * published to a throwaway Verdaccio registry on loopback that serves only `@sdgw/*` and has no uplinks, and
 * installed with `npm install` into fresh projects that take every other package from the npm registry, under
 * the Node version a test asks for (`npx -p node@X`, so the machine's own Node does not matter).
 *
 * Used by the registry tests' global setup (one registry, every package published once) and by the tests that
 * install from it (`packages.test.ts`, `fresh-projects.test.ts`, `guides.test.ts`).
 */
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { ROOT } from "../src/generate.ts";
import { ensureBuilt, needsBuild } from "../src/testing/dist.ts";

const run = promisify(execFile);

/** A published package of this workspace, as its package.json describes it. */
export interface WorkspacePackage {
  /** `@sdgw/client`. */
  name: string;
  /** `/…/packages/client`. */
  dir: string;
  version: string;
  /** The lowest Node its `engines.node` (`>=X.Y`) allows, as `[major, minor]`. */
  minNode: [number, number];
  /** Whether its root export offers a `require` condition (CommonJS). */
  cjs: boolean;
  bin: Record<string, string>;
  peerDependencies: Record<string, string>;
  optionalPeers: string[];
}

/** Every package under `packages/` that is built for publishing (has a tsup config and is not private). */
export function workspacePackages(): WorkspacePackage[] {
  return readdirSync(join(ROOT, "packages"))
    .map((d) => join(ROOT, "packages", d))
    .filter((dir) => readdirSync(dir).includes("tsup.config.ts"))
    .map((dir) => {
      const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as {
        name: string;
        version: string;
        private?: boolean;
        engines?: { node?: string };
        exports: Record<string, unknown>;
        bin?: Record<string, string>;
        peerDependencies?: Record<string, string>;
        peerDependenciesMeta?: Record<string, { optional?: boolean }>;
      };
      const engine = /^>=\s*(\d+)(?:\.(\d+))?/.exec(pkg.engines?.node ?? "");
      if (!engine)
        throw new Error(
          `${pkg.name}: engines.node must be ">=X" or ">=X.Y" (got ${JSON.stringify(pkg.engines?.node)})`,
        );
      return {
        name: pkg.name,
        dir,
        version: pkg.version,
        minNode: [Number(engine[1]), Number(engine[2] ?? 0)] as [number, number],
        cjs: JSON.stringify(pkg.exports["."] ?? {}).includes('"require"'),
        bin: pkg.bin ?? {},
        peerDependencies: pkg.peerDependencies ?? {},
        optionalPeers: Object.entries(pkg.peerDependenciesMeta ?? {})
          .filter(([, m]) => m.optional)
          .map(([n]) => n),
        private: pkg.private,
      };
    })
    .filter((p) => !p.private);
}

/** Whether Node `major` (its latest release: `npx -p node@major`) satisfies a package's `engines`. */
export function nodeAllows(p: WorkspacePackage, major: number): boolean {
  // node@22 is the newest 22.x, which is past 22.12: only the major can fall short.
  return major >= p.minNode[0];
}

/** Where a long command is: one line per step (`pnpm registry` prints them; tests pass nothing). */
export type Progress = (line: string) => void;

/**
 * Packs every package with `pnpm pack` (as `pnpm publish` would) into `outDir`, building first those whose `dist/`
 * is older than their sources; answers the tarballs' paths. `progress` hears each package's step.
 */
export async function packAll(
  packages: WorkspacePackage[],
  outDir: string,
  progress?: Progress,
): Promise<Map<string, string>> {
  mkdirSync(outDir, { recursive: true });
  const tarballs = new Map<string, string>();
  for (const [i, p] of packages.entries()) {
    const step = `[${i + 1}/${packages.length}] ${p.name}`;
    if (needsBuild(p.dir)) progress?.(`${step}: building (tsup)…`);
    ensureBuilt(p.dir);
    progress?.(`${step}: packing…`);
    const { stdout } = await run("pnpm", ["pack", "--ignore-scripts", "--pack-destination", outDir], {
      cwd: p.dir,
      timeout: 120_000,
    });
    const file = stdout
      .trim()
      .split("\n")
      .map((l) => l.trim())
      .find((l) => l.endsWith(".tgz"));
    if (!file) throw new Error(`pnpm pack printed no tarball for ${p.name}:\n${stdout}`);
    tarballs.set(p.name, file.startsWith("/") ? file : join(outDir, file));
  }
  return tarballs;
}

/** A running throwaway registry. */
export interface LocalRegistry {
  /** `http://127.0.0.1:PORT/`. */
  url: string;
  /** A token of the registry's one user, for `npm publish`. */
  token: string;
  close(): Promise<void>;
}

/**
 * Starts Verdaccio in this process on 127.0.0.1 and `port` (0: a free one), storing in a new temporary folder: `@sdgw/*` may be
 * read by anyone and published by its user; no other name is served, and there are no uplinks (nothing is fetched
 * from elsewhere). Answers once a user exists to publish with.
 */
export async function startRegistry(port = 0): Promise<LocalRegistry> {
  const storage = mkdtempSync(join(tmpdir(), "sdgw-registry-"));
  const { runServer } = (await import("verdaccio")) as unknown as { runServer(config: object): Promise<Server> };
  const server = await runServer({
    self_path: storage,
    storage: join(storage, "storage"),
    auth: { htpasswd: { file: join(storage, "htpasswd"), max_users: 1 } },
    uplinks: {},
    packages: { "@sdgw/*": { access: "$all", publish: "$authenticated", unpublish: "$authenticated" } },
    web: { enable: false },
    middlewares: { audit: { enabled: false } },
    log: { type: "stdout", format: "pretty", level: "fatal" },
    max_body_size: "50mb",
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  const close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections?.();
      server.close(() => resolve());
      rmSync(storage, { recursive: true, force: true });
    });
  // npm's `adduser` request: creates the user and answers its token.
  const response = await fetch(`${url}-/user/org.couchdb.user:sdgw-release`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      name: "sdgw-release",
      password: "local-only-registry",
      type: "user",
      roles: [],
      date: new Date().toISOString(),
    }),
  });
  const body = (await response.json()) as { token?: string };
  if (!response.ok || !body.token) {
    await close();
    throw new Error(`the local registry did not create its user: HTTP ${response.status} ${JSON.stringify(body)}`);
  }
  return { url, token: body.token, close };
}

/** The `.npmrc` of a project that takes `@sdgw/*` from the local registry and the rest from the npm registry. */
export function npmrc(registry: { url: string; token?: string }): string {
  const host = registry.url.replace(/^https?:/, "");
  return [
    `@sdgw:registry=${registry.url}`,
    ...(registry.token ? [`${host}:_authToken=${registry.token}`] : []),
    "fund=false",
    "audit=false",
    "update-notifier=false",
    "",
  ].join("\n");
}

/** Publishes packed tarballs to the local registry with npm; `progress` hears each one. */
export async function publishAll(
  tarballs: Map<string, string>,
  registry: LocalRegistry,
  progress?: Progress,
): Promise<void> {
  const cwd = mkdtempSync(join(tmpdir(), "sdgw-publish-"));
  try {
    writeFileSync(join(cwd, ".npmrc"), npmrc(registry));
    let i = 0;
    for (const [name, tarball] of tarballs) {
      progress?.(`[${++i}/${tarballs.size}] ${name}: publishing to ${registry.url}…`);
      try {
        await run(
          "npm",
          ["publish", tarball, "--registry", registry.url, "--access", "public", "--userconfig", join(cwd, ".npmrc")],
          { cwd, timeout: 120_000 },
        );
      } catch (e) {
        throw new Error(`npm publish ${name} failed: ${(e as { stderr?: string }).stderr ?? String(e)}`);
      }
    }
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
}

/** The result of one command in a consumer project. */
export interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** A fresh project outside the workspace whose `@sdgw/*` come from the local registry. */
export interface ConsumerProject {
  dir: string;
  /** Node major the project's commands run on. */
  node: number;
  /** Runs a command with this project's Node first on PATH (`npx -y -p node@X -- …`); never throws. */
  exec(
    command: string,
    args: string[],
    options?: { env?: Record<string, string>; timeoutMs?: number; input?: string },
  ): Promise<Ran>;
  /** `npm install` of these specs, as a user types it; throws with npm's output when it fails. */
  install(specs: string[], options?: { dev?: boolean }): Promise<void>;
  /** Writes a file of the project (folders made as needed). */
  write(path: string, text: string): void;
  remove(): void;
}

/**
 * Makes a fresh project in a new temporary folder: the `.npmrc` for the local registry and a package.json, or with
 * `packageJson: null` none (the reader's `npm init -y` makes it). `npm` picks the npm its commands run (`"11"`:
 * `npx -p npm@11`, as a reader with npm 11 has), else the one that comes with that Node.
 */
export function consumerProject(
  registryUrl: string,
  node: number,
  packageJson: Record<string, unknown> | null = {},
  npm?: string,
): ConsumerProject {
  const dir = mkdtempSync(join(tmpdir(), `sdgw-consumer-node${node}-`));
  if (packageJson)
    writeFileSync(
      join(dir, "package.json"),
      JSON.stringify({ name: "consumer", version: "0.0.0", private: true, ...packageJson }, null, 2),
    );
  writeFileSync(join(dir, ".npmrc"), npmrc({ url: registryUrl }));
  const project: ConsumerProject = {
    dir,
    node,
    async exec(command, args, options = {}) {
      const tools = ["-p", `node@${node}`, ...(npm ? ["-p", `npm@${npm}`] : [])];
      const child = execFile("npx", ["-y", ...tools, "--", command, ...args], {
        cwd: dir,
        env: { ...cleanEnv(), ...options.env },
        timeout: options.timeoutMs ?? 180_000,
        maxBuffer: 64 * 1024 * 1024,
        encoding: "utf8",
      });
      if (options.input !== undefined) child.stdin?.end(options.input);
      else child.stdin?.end();
      let stdout = "";
      let stderr = "";
      child.stdout?.on("data", (d: string) => (stdout += d));
      child.stderr?.on("data", (d: string) => (stderr += d));
      const code = await new Promise<number>((resolve) =>
        child.on("close", (c, signal) => resolve(c ?? (signal ? 128 : 1))),
      );
      return { code, stdout, stderr };
    },
    async install(specs, options = {}) {
      const ran = await project.exec("npm", ["install", ...(options.dev ? ["--save-dev"] : []), ...specs], {
        timeoutMs: 300_000,
      });
      if (ran.code !== 0)
        throw new Error(
          `npm install ${specs.join(" ")} on Node ${node} failed (${ran.code}):\n${ran.stdout}\n${ran.stderr}`,
        );
    },
    write(path, text) {
      const file = join(dir, path);
      mkdirSync(join(file, ".."), { recursive: true });
      writeFileSync(file, text);
    },
    remove() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return project;
}

/**
 * The environment of a consumer's commands: this workspace's pnpm and vitest settings removed (a user's shell has
 * none of them), and npm's own `npm_config_*` too, so that the project's `.npmrc` is what counts.
 */
function cleanEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined) continue;
    if (/^(npm_|PNPM_|pnpm_|VITEST|VITE_|NODE_OPTIONS$|NODE_ENV$|TEST$|SDGW_)/i.test(k)) continue;
    env[k] = v;
  }
  // `pnpm run` puts the workspace's node_modules/.bin first on PATH; a user's project has only its own.
  env["PATH"] = (env["PATH"] ?? "")
    .split(":")
    .filter((d) => !d.startsWith(ROOT) && !d.includes("/node_modules/.bin"))
    .join(":");
  return env;
}
