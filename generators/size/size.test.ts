/**
 * The size check of CI (issue 18): every package's main entry points, bundled as a user's bundler would (see
 * size.ts), each within its budget in budgets.json. Prints the table; `pnpm size` prints it without the test.
 */
import { describe, expect, it } from "vitest";
import { budgets, ENTRIES, ESBUILD_VERSION, formatSize, measure, type Size } from "./size.ts";

const BUDGETS = budgets();
const measured: Size[] = [];

describe(`bundle sizes (esbuild ${ESBUILD_VERSION}, minified, gzip -9)`, () => {
  it("has a budget for every entry and an entry for every budget", () => {
    expect(Object.keys(BUDGETS).sort()).toEqual(ENTRIES.map((e) => e.name).sort());
  });

  it.each(ENTRIES.map((e) => [e.name, e] as const))(
    "%s is within its budget",
    async (_name, entry) => {
      const size = await measure(entry);
      measured.push(size);
      console.log(formatSize(size, BUDGETS[entry.name]));
      expect(size.gzip, `${entry.name}: ${size.gzip} B min+gzip, budget ${BUDGETS[entry.name]} B`).toBeLessThanOrEqual(
        BUDGETS[entry.name]!,
      );
    },
    60_000,
  );

  it("keeps validateSearchEnvelope alone to a small part of the whole set (tree-shaking works)", () => {
    const one = measured.find((s) => s.name === "@sdgw/validators validateSearchEnvelope");
    const all = measured.find((s) => s.name === "@sdgw/validators (everything)");
    if (!one || !all) return; // measured above; a filtered run may skip them
    expect(one.gzip).toBeLessThan(all.gzip / 4);
  });
});
