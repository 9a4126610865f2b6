/**
 * Finishes the HTTP reference that `redocly build-docs` wrote to `docs/http/index.html`, and writes its error page:
 *
 * - the page loads Redoc from the Redocly CDN; it is pointed at a copy of the same script beside it
 *   (`redoc.standalone.js`, from @redocly/cli), so the reference opens with no network;
 * - `docs/http/errors.html`: the contract's error catalogue (`x-error-catalogue` of spec/openapi.yaml), one row per
 *   code (HTTP statuses, whether a retry helps, where it stands in envelopes, its meaning), the `fix` members its
 *   examples carry, and an example answer from `fixtures/errors/`.
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";

const ROOT = join(import.meta.dirname, "..", "..");
const OUT = join(ROOT, "docs", "http");
const CDN = /https:\/\/cdn\.redocly\.com\/redoc\/v[\d.]+\/bundles\/redoc\.standalone\.js/g;

// 1. Redoc from beside the page.
const index = join(OUT, "index.html");
let html = readFileSync(index, "utf8");
if (!CDN.test(html) && !html.includes("./redoc.standalone.js"))
  throw new Error("docs/http/index.html: no Redoc script to point at a local copy (did @redocly/cli change its page?)");
html = html
  .replace(
    /<link rel="modulepreload" href="https:\/\/cdn\.redocly\.com[^>]*>/g,
    '<link rel="modulepreload" href="./redoc.standalone.js" />',
  )
  .replace(CDN, "./redoc.standalone.js")
  .replace(
    "<body>",
    '<body><p style="margin:0;padding:8px 16px;font:14px sans-serif;background:#f4f6fa">Also: <a ' +
      'href="./errors.html">the error catalogue</a> (every code, its HTTP status, whether to ' +
      "retry, an example).</p>",
  );
if (/https:\/\/cdn\.redocly\.com\/redoc/.test(html))
  throw new Error("docs/http/index.html still loads Redoc from the CDN");
writeFileSync(index, html);
// The script shows Redocly's logo from its CDN: an empty image instead, so that nothing is asked of the network.
const script = readFileSync(
  join(ROOT, "node_modules", "@redocly", "cli", "lib", "chunks", "redoc.standalone.js"),
  "utf8",
).replace(/https:\/\/cdn\.redoc\.ly\/redoc\/logo-mini(-full)?\.svg/g, "data:,");
writeFileSync(join(OUT, "redoc.standalone.js"), script);

// 2. The error catalogue.
interface Row {
  http: number[];
  retry: boolean | "depends";
  envelope: "all" | "data" | "none";
  meaning: string;
}
const spec = parse(readFileSync(join(ROOT, "spec", "openapi.yaml"), "utf8")) as {
  info: { version: string };
  "x-error-catalogue": Record<string, Row>;
};
const catalogue = spec["x-error-catalogue"];
const dir = join(ROOT, "fixtures", "errors");
const examples = readdirSync(dir)
  .filter((f) => f.endsWith(".json"))
  .sort()
  .map((f) => ({
    file: f,
    body: JSON.parse(readFileSync(join(dir, f), "utf8")) as { code?: string; fix?: Record<string, unknown> },
  }));

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
const code = (s: string) => `<code>${esc(s)}</code>`;
const where = {
  all: "every data answer, GET /v1/search included",
  data: "data routes other than GET /v1/search, and tool answers",
  none: "never (only as an HTTP error)",
};
const rows = Object.entries(catalogue).map(([name, row]) => {
  const mine = examples.filter((e) => e.body.code === name);
  const fix = [...new Set(mine.flatMap((e) => Object.keys(e.body.fix ?? {})))];
  const example = mine[0];
  const statuses = row.http
    .map((s) => (s === 200 ? "200 (inside an envelope's <code>error</code>)" : String(s)))
    .join(", ");
  const retry = row.retry === "depends" ? "depends: the error's own <code>retryable</code>" : row.retry ? "yes" : "no";
  return (
    `<section id="${esc(name)}">
<h2>${code(name)}</h2>
<p>${esc(row.meaning)}</p>
<table><tr><th>HTTP status</th><td>${statuses}</td></tr><tr><th>retry ` +
    `helps</th><td>${retry}</td></tr><tr><th>inside an ` +
    `envelope</th><td>${where[row.envelope]}</td></tr><tr><th><code>fix</code> ` +
    `members</th><td>${fix.length ? fix.map(code).join(", ") : "—"}</td></tr></table>
${
  example
    ? `<p>Example (<code>fixtures/errors/${esc(example.file)}</code>):</p>\n` +
      `<pre>${esc(JSON.stringify(example.body, null, 2))}</pre>`
    : "<p>Example: see the envelopes of the operations that answer it.</p>"
}
</section>`
  );
});
writeFileSync(
  join(OUT, "errors.html"),
  `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Error catalogue · Social Data Gateway HTTP API</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:960px;margin:2em auto;padding:0 ` +
    `1em;color:#222}table{border-collapse:collapse}th,td{text-align:left;border:1px solid ` +
    `#ddd;padding:4px 8px;vertical-align:top}pre{background:#f6f8fa;padding:8px;overflow:auto}section{border-top:1px ` +
    `solid #eee;margin-top:1.5em}</style>
</head><body>
<p><a href="./index.html">← the HTTP API reference</a></p>
<h1>Error catalogue</h1>
<p>The ${rows.length} error codes of the Social Data Gateway (contract ${esc(spec.info.version)}, ` +
    `<code>x-error-catalogue</code> of <code>spec/openapi.yaml</code>). No error is charged. An error ` +
    `answered under an HTTP status other than 200 has the error structure (<code>request_id</code>, ` +
    `<code>schema_version</code>, <code>code</code>, <code>message</code>, <code>retryable</code>, ` +
    `<code>fix</code>); one inside an HTTP 200 answer stands in the envelope's <code>error</code>.</p>
<p>${Object.keys(catalogue)
      .map((c) => `<a href="#${esc(c)}">${code(c)}</a>`)
      .join(" · ")}</p>
${rows.join("\n")}
</body></html>
`,
);
console.log(`docs/http: index.html (Redoc, local script), errors.html (${rows.length} codes)`);
