/**
 * The console's static files (the `vite build` output of @sdgw/console) at `/console/` (D86). Static serving only:
 * `GET /console/` and `GET /console/*` (the session and `/console/api/` routes are more specific and win), files
 * read from disk once on first need and kept in memory; nothing is added to the API's hooks or hot path. A page path
 * (`/console/keys`, no dot) answers `index.html`, the console routes in the browser. Without a build, every console
 * page answers `503` with a short HTML page saying how to build it.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { extname, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import type { FastifyInstance, FastifyReply } from "fastify";

/** Where `pnpm --filter @sdgw/console build` writes the console (packages/console/dist). */
export const CONSOLE_DIST = fileURLToPath(new URL("../../../console/dist/", import.meta.url));

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".json": "application/json; charset=utf-8",
  ".txt": "text/plain; charset=utf-8",
};

/**
 * The console's pages allow only the server itself: no CDN, no other origin for scripts, styles, images or calls.
 * Inline style attributes are allowed (the bars' widths); inline scripts are not.
 */
export const CONSOLE_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: " +
  "blob:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

interface StaticFile {
  type: string;
  body: Buffer;
}

function readAll(dir: string): Map<string, StaticFile> | null {
  if (!existsSync(join(dir, "index.html"))) return null;
  const files = new Map<string, StaticFile>();
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else
        files.set(relative(dir, p).split(sep).join("/"), {
          type: TYPES[extname(p)] ?? "application/octet-stream",
          body: readFileSync(p),
        });
    }
  };
  walk(dir);
  return files;
}

/** Whether the console was built (its index.html exists). */
export function consoleBuilt(dir: string = CONSOLE_DIST): boolean {
  return existsSync(join(dir, "index.html"));
}

const NOT_BUILT =
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Console not ` +
  `built</title></head><body><main><h1>The console is not built</h1><p>This server serves the ` +
  `console from <code>packages/console/dist</code>, which does not exist yet. Build it with ` +
  `<code>pnpm --filter @sdgw/console build</code> (the test run builds it too), then reload. The API ` +
  `under <code>/v1/</code> works without it.</p></main></body></html>`;

/** Registers `GET /console` (a redirect), `GET /console/` and `GET /console/*`. Called once by `buildApp`. */
export function consoleStaticRoutes(app: FastifyInstance, dir: string = CONSOLE_DIST): void {
  let files: Map<string, StaticFile> | null = null;
  const html = (reply: FastifyReply, status: number, body: string | Buffer) =>
    reply.code(status).headers({ "content-type": TYPES[".html"]!, "content-security-policy": CONSOLE_CSP }).send(body);
  const serve = (path: string, reply: FastifyReply) => {
    files ??= readAll(dir);
    if (!files) return html(reply, 503, NOT_BUILT);
    const file = files.get(path);
    if (file)
      return reply
        .code(200)
        .headers({ "content-type": file.type, "content-security-policy": CONSOLE_CSP })
        .send(file.body);
    // A page of the console (no file extension): the single page, which routes in the browser.
    if (path === "" || !/\.[A-Za-z0-9]+$/.test(path)) return html(reply, 200, files.get("index.html")!.body);
    return reply
      .code(404)
      .headers({ "content-type": TYPES[".txt"]! })
      .send(`No console file ${path.slice(0, 200)}.`);
  };
  app.get("/console", (_req, reply) => reply.code(308).header("location", "/console/").send());
  app.get("/console/", (_req, reply) => serve("", reply));
  app.get<{ Params: { "*": string } }>("/console/*", (req, reply) =>
    serve((req.params as { "*": string })["*"], reply),
  );
}
