/**
 * The READMEs and guides as a reader meets them. A package README is also the package's page on the npm registry,
 * where only links inside the package or absolute links work: so no `../` link, every relative link names a file
 * of the package, every link into the repository (`https://github.com/sdgw/toolkit/blob/main/…`) names a file that
 * is here, an install line and a short example come first, and `files` ships the README. Every `Dn` a reader meets
 * (guides, the README, the package READMEs) is a link to its entry in spec/DECISIONS.md, whose anchors are
 * `<a id="dN"></a>`.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..");
/** Where the repository is read on the web: the `repository` of every package.json, as a file base. */
const REPO = "https://github.com/sdgw/toolkit/blob/main/";

interface Pkg {
  dir: string;
  name: string;
  private?: boolean;
  files?: string[];
  repository?: { url: string; directory: string };
  homepage?: string;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}
const packages: Pkg[] = readdirSync(join(ROOT, "packages")).map((dir) => ({
  dir,
  ...(JSON.parse(readFileSync(join(ROOT, "packages", dir, "package.json"), "utf8")) as Omit<Pkg, "dir">),
}));
const published = packages.filter((p) => !p.private);

/** The Markdown with fenced blocks and inline code blanked out (links in code are not links). */
function prose(markdown: string): string {
  return markdown.replace(/^```[^\n]*\n[\s\S]*?^```\s*$/gm, "").replace(/`[^`\n]*`/g, "``");
}
function links(markdown: string): Array<{ text: string; href: string }> {
  return [...prose(markdown).matchAll(/\[([^\]]*)\]\(([^)\s]+)\)/g)].map((m) => ({ text: m[1]!, href: m[2]! }));
}
function fences(markdown: string): Array<{ lang: string; lines: string[]; at: number }> {
  return [...markdown.matchAll(/^```(\w*)\n([\s\S]*?)^```\s*$/gm)].map((m) => ({
    lang: m[1]!,
    lines: m[2]!.replace(/\n$/, "").split("\n"),
    at: m.index,
  }));
}
/** A link's target as a path in this repository (with its anchor), or null for a link outside it. */
function target(file: string, href: string): { path: string; anchor: string } | null {
  const [path, anchor = ""] = href.split("#") as [string, string?];
  if (href.startsWith(REPO)) return { path: join(ROOT, path.slice(REPO.length)), anchor };
  if (/^[a-z][a-z0-9+.-]*:/i.test(href)) return null;
  return { path: path === "" ? join(ROOT, file) : resolve(dirname(join(ROOT, file)), path), anchor };
}

describe.each(published.map((p) => [p.name, p] as const))("%s README", (_name, pkg) => {
  const file = `packages/${pkg.dir}/README.md`;
  const readme = readFileSync(join(ROOT, file), "utf8");

  it("has no ../ link, and its relative links name files inside the package", () => {
    for (const { href } of links(readme)) {
      expect(href, `${file}: ${href} leaves the package (broken on the npm registry)`).not.toMatch(/^\.\.\/|\/\.\.\//);
      const t = target(file, href);
      if (!t || href.startsWith(REPO) || href.startsWith("#")) continue;
      expect(relative(join(ROOT, "packages", pkg.dir), t.path).startsWith(".."), `${file}: ${href}`).toBe(false);
      expect(existsSync(t.path), `${file}: ${href} names no file`).toBe(true);
    }
  });

  it("links into the repository name files that exist", () => {
    for (const { href } of links(readme)) {
      const t = href.startsWith(REPO) ? target(file, href)! : null;
      if (t) expect(existsSync(t.path), `${file}: ${href} names no file of the repository`).toBe(true);
    }
  });

  it("opens with an install line (with its required peers) and an example of at most 10 lines", () => {
    const blocks = fences(readme);
    const install = blocks.find((b) => b.lang === "sh" && b.lines.some((l) => l.startsWith("npm install")));
    expect(install, `${file}: no \`npm install ${pkg.name}\` block`).toBeDefined();
    const line = install!.lines.find((l) => l.startsWith("npm install"))!;
    expect(line).toMatch(new RegExp(`^npm install (-D )?${pkg.name.replace("/", "\\/")}(\\s|$)`));
    for (const [peer, range] of Object.entries(pkg.peerDependencies ?? {})) {
      if (!pkg.peerDependenciesMeta?.[peer]?.optional)
        expect(line, `${file}: the install line names the peer ${peer}`).toContain(
          `${peer}@${range.replace(/\.\d+\.\d+$/, "")}`,
        );
    }
    const example = blocks.find((b) => b.lang === "ts");
    expect(example, `${file}: no TypeScript example`).toBeDefined();
    expect(example!.lines.length, `${file}: the first example is short`).toBeLessThanOrEqual(10);
    const secondHeading = [...readme.matchAll(/^## /gm)][1]?.index ?? readme.length;
    expect(install!.at, `${file}: the install line comes before the second section`).toBeLessThan(secondHeading);
    expect(example!.at, `${file}: the example comes before the second section`).toBeLessThan(secondHeading);
  });

  it("links forward to the guides and the references", () => {
    const hrefs = links(readme).map((l) => l.href);
    expect(hrefs).toContain(`${REPO}docs/README.md`);
    expect(hrefs.some((h) => h.startsWith(`${REPO}docs/guides/`))).toBe(true);
    expect(hrefs).toContain(`${REPO}spec/openapi.yaml`);
  });

  it("is shipped (files), and package.json says where the repository is", () => {
    expect(pkg.files, `${pkg.name}: files`).toContain("README.md");
    expect(pkg.repository?.url).toBe("git+https://github.com/sdgw/toolkit.git");
    expect(pkg.repository?.directory).toBe(`packages/${pkg.dir}`);
    expect(pkg.homepage).toBe(`https://github.com/sdgw/toolkit/tree/main/packages/${pkg.dir}#readme`);
  });
});

describe("Dn mentions", () => {
  const decisions = readFileSync(join(ROOT, "spec", "DECISIONS.md"), "utf8");
  const anchors = new Set(
    [...decisions.matchAll(/^<a id="(d\d+)"><\/a>\n\n### D(\d+)\./gm)]
      .filter((m) => m[1] === `d${m[2]}`)
      .map((m) => m[1]!),
  );
  const readers = [
    "README.md",
    ...readdirSync(join(ROOT, "docs", "guides"))
      .filter((f) => f.endsWith(".md"))
      .map((f) => `docs/guides/${f}`),
    ...published.map((p) => `packages/${p.dir}/README.md`),
    "packages/console/README.md", // private: read in the repository, so its links may be relative
  ];

  it("every entry of spec/DECISIONS.md has its anchor", () => {
    const entries = [...decisions.matchAll(/^### D(\d+)\./gm)].map((m) => `d${m[1]}`);
    expect(entries.length).toBeGreaterThan(90);
    expect(entries.filter((e) => !anchors.has(e))).toEqual([]);
  });

  it.each(readers)("%s: every Dn is a link to its entry", (file) => {
    const text = readFileSync(join(ROOT, file), "utf8");
    for (const { text: label, href } of links(text)) {
      const m = /^D(\d+)$/.exec(label);
      if (!m) continue;
      const t = target(file, href);
      expect(t && relative(ROOT, t.path), `${file}: [${label}](${href})`).toBe(join("spec", "DECISIONS.md"));
      expect(t!.anchor, `${file}: [${label}](${href})`).toBe(`d${m[1]}`);
      expect(anchors.has(t!.anchor), `${file}: ${label} has no entry`).toBe(true);
    }
    const unlinked = prose(text)
      .replace(/\[D\d+\]\([^)\s]+\)/g, "")
      .match(/\bD\d+\b/g);
    expect(unlinked ?? [], `${file}: Dn mentions that are not links`).toEqual([]);
  });
});
