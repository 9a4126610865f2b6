/**
 * `/docs`: the HTTP API reference (Redoc, rendered from spec/openapi.yaml by `pnpm run docs` into `docs/http/`) and
 * its error catalogue, served as static files with no network: the page loads Redoc from beside it. Not part of the
 * contract, like `/mcp`. When the reference was not built (a published server has no `docs/http/`), `/docs` answers
 * the contract's `404 not_found` saying how to build it. D53's headers are added by the app's `onSend` hook.
 */
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { FastifyInstance } from "fastify";
import { ERROR_CATALOGUE } from "@sdgw/types";
import { errorAnswer } from "@sdgw/validators";
import type { GatewayPorts as Gateway } from "../storage/port.ts";
import { newRequestId } from "../ids.ts";

const TYPES: Record<string, string> = {
  html: "text/html; charset=utf-8",
  js: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
  json: "application/json",
};

/** Where the built reference is: the repository's `docs/http/` (the server runs from its sources). */
export const DOCS_DIR = fileURLToPath(new URL("../../../../docs/http/", import.meta.url));

/** How to build the reference, on a machine whose Node is 20 and on one with Node 24 and pnpm 12. */
export const DOCS_BUILD_COMMANDS =
  "`npx -y -p node@24 -p pnpm@12 -- pnpm run docs` (a machine whose Node is 20) or `pnpm run docs` (Node 24 and pnpm 12)";

/** Registers `GET /docs`, `/docs/` and `/docs/<file>` on the app. */
export function docsRoutes(app: FastifyInstance, gw: Gateway, dir: string = DOCS_DIR): void {
  /** The built files by name, read once, on the first request that finds them. */
  let files: Map<string, { type: string; body: Buffer }> | null = null;
  const load = () => {
    if (files || !existsSync(`${dir}index.html`)) return files;
    files = new Map();
    for (const name of ["index.html", "errors.html", "redoc.standalone.js"]) {
      if (existsSync(dir + name))
        files.set(name, {
          type: TYPES[name.split(".").pop()!] ?? "application/octet-stream",
          body: readFileSync(dir + name),
        });
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
        message: built
          ? `There is no page ${url.split("?")[0]!.slice(0, 200)} in the HTTP reference.`
          : `The HTTP reference was not built on this server: run ${DOCS_BUILD_COMMANDS} in the repository, then open /docs again.`,
        fix: {
          allowed: ["/docs/", "/docs/errors.html"],
          note: built
            ? "The reference is /docs/ and its error catalogue /docs/errors.html."
            : "`pnpm run docs` writes docs/http/ (Redoc and the error catalogue); the server serves it at /docs. `pnpm start` builds it when it is missing.",
        },
      } as never,
      { urls: gw.config.urls, now: new Date(gw.now()) },
    );
    return reply
      .code(a.status)
      .headers({ ...a.headers, "content-type": "application/json" })
      .send(JSON.stringify(a.body));
  };
  app.get("/docs", (req, reply) => (load() ? reply.redirect("/docs/", 302) : answer("index.html", reply, req.url)));
  app.get("/docs/", (req, reply) => answer("index.html", reply, req.url));
  app.get<{ Params: { file: string } }>("/docs/:file", (req, reply) => answer(req.params.file, reply, req.url));
}

/** Whether the error catalogue is built where this server serves it from. */
export function docsBuilt(dir: string = DOCS_DIR): boolean {
  return existsSync(`${dir}errors.html`);
}

/** A Host header that can stand in a URL as it is (a name or address, and a port). */
const HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/**
 * D92, applied once to every answer on its way out (the app's `onSend` hook): the body of an error answered under a
 * non-200 status, whose `code` the catalogue lists, gets at the end of its `fix.note` the address of that code's
 * entry, `<origin>/docs/errors.html#<code>`, `origin` being the address the request was sent to (its Host; the path
 * alone when the Host cannot stand in a URL). `fix` keeps the seed's members: a note is added when there was none.
 * Any other payload is answered as it is.
 */
export function withCatalogueLink(payload: unknown, protocol: string, host: string | undefined): unknown {
  if (typeof payload !== "string" || !payload.startsWith("{") || !payload.includes('"fix"')) return payload;
  let body: { code?: unknown; fix?: { note?: unknown } };
  try {
    body = JSON.parse(payload) as typeof body;
  } catch {
    return payload;
  }
  const code = body.code;
  if (
    typeof code !== "string" ||
    !Object.hasOwn(ERROR_CATALOGUE, code) ||
    typeof body.fix !== "object" ||
    body.fix === null
  )
    return payload;
  const origin = host && HOST.test(host) ? `${protocol}://${host}` : "";
  const note = typeof body.fix.note === "string" && body.fix.note.trim() !== "" ? `${body.fix.note.trimEnd()} ` : "";
  body.fix = { ...body.fix, note: `${note}The error catalogue explains ${code}: ${origin}/docs/errors.html#${code}` };
  return JSON.stringify(body);
}

/**
 * The pointers `GET /` answers (D131): where a person who opened the server's address goes next. Paths on this
 * server; `docs` says whether the reference is built and, if not, how to build it.
 */
export function homeAnswer(built: boolean = docsBuilt()): Record<string, unknown> {
  return {
    service: "Social Data Gateway reference server",
    links: {
      console: "/console/",
      docs: "/docs",
      errors: "/docs/errors.html",
      capabilities: "/v1/capabilities",
      openapi: "/openapi.json",
      mcp: "/mcp",
      health: "/healthz",
    },
    docs_built: built,
    note: built
      ? "Calls go to /v1/… with a key in the X-API-Key header (or Authorization: Bearer); the reference is at /docs."
      : `Calls go to /v1/… with a key in the X-API-Key header (or Authorization: Bearer). /docs is not built: run ${DOCS_BUILD_COMMANDS} in the repository.`,
  };
}

/** Registers `GET /` (D131): the pointers above, as JSON. */
export function homeRoute(app: FastifyInstance, dir: string = DOCS_DIR): void {
  app.get("/", (_req, reply) =>
    reply
      .code(200)
      .header("content-type", "application/json; charset=utf-8")
      .send(JSON.stringify(homeAnswer(docsBuilt(dir)))),
  );
}
