/**
 * `/docs`: the HTTP API reference (Redoc, rendered from spec/openapi.yaml by `pnpm run docs` into `docs/http/`) and
 * its error catalogue, served as static files with no network: the page loads Redoc from beside it. Not part of the
 * contract, like `/mcp`. When the reference was not built (a published server has no `docs/http/`), `/docs` answers
 * the contract's `404 not_found` saying how to build it. D53's headers are added by the app's `onSend` hook.
 */
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { FastifyInstance } from "fastify";
import { errorAnswer } from "@sdgw/validators";
import type { Gateway } from "../gateway.ts";
import { newRequestId } from "../ids.ts";

const TYPES: Record<string, string> = { html: "text/html; charset=utf-8", js: "text/javascript; charset=utf-8", css: "text/css; charset=utf-8", json: "application/json" };

/** Where the built reference is: the repository's `docs/http/` (the server runs from its sources). */
export const DOCS_DIR = fileURLToPath(new URL("../../../../docs/http/", import.meta.url));

/** Registers `GET /docs`, `/docs/` and `/docs/<file>` on the app. */
export function docsRoutes(app: FastifyInstance, gw: Gateway, dir: string = DOCS_DIR): void {
  /** The built files by name, read once, on the first request that finds them. */
  let files: Map<string, { type: string; body: Buffer }> | null = null;
  const load = () => {
    if (files || !existsSync(`${dir}index.html`)) return files;
    files = new Map();
    for (const name of ["index.html", "errors.html", "redoc.standalone.js"]) {
      if (existsSync(dir + name)) files.set(name, { type: TYPES[name.split(".").pop()!] ?? "application/octet-stream", body: readFileSync(dir + name) });
    }
    return files;
  };
  const answer = (name: string, reply: import("fastify").FastifyReply, url: string) => {
    const built = load();
    const file = built?.get(name);
    if (file) return reply.code(200).header("content-type", file.type).send(file.body);
    const requestId = newRequestId(gw.now());
    const a = errorAnswer(
      "not_found",
      requestId,
      {
        reason: "no_such_route",
        message: built ? `There is no page ${url.split("?")[0]!.slice(0, 200)} in the HTTP reference.` : "The HTTP reference was not built on this server: run `pnpm run docs` in the repository, then open /docs again.",
        fix: { allowed: ["/docs/", "/docs/errors.html"], note: built ? "The reference is /docs/ and its error catalogue /docs/errors.html." : "`pnpm run docs` writes docs/http/ (Redoc and the error catalogue); the server serves it at /docs." },
      } as never,
      { urls: gw.config.urls, now: new Date(gw.now()) },
    );
    return reply.code(a.status).headers({ ...a.headers, "content-type": "application/json" }).send(JSON.stringify(a.body));
  };
  app.get("/docs", (req, reply) => (load() ? reply.redirect("/docs/", 302) : answer("index.html", reply, req.url)));
  app.get("/docs/", (req, reply) => answer("index.html", reply, req.url));
  app.get<{ Params: { file: string } }>("/docs/:file", (req, reply) => answer(req.params.file, reply, req.url));
}
