// The layering rule, read from the imports: deployed worker code, the GPU runner and the client each
// stand on schema/ and common/ alone (and their own folder), never on one another, the scripts,
// the tests or the benchmarks; schema/ and common/ stand on nothing above them. A violation is
// reported as "file → target".
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");

/** Each layer and the top-level folders its files must not import from. */
const FORBIDDEN: Record<string, string[]> = {
  worker: ["scripts", "gpu-runner", "test", "bench"],
  "gpu-runner": ["worker", "scripts", "test", "bench"],
  client: ["worker", "gpu-runner", "scripts", "test", "bench"],
  common: ["worker", "gpu-runner", "scripts", "client", "test", "bench"],
  schema: ["worker", "gpu-runner", "scripts", "client", "test", "bench"],
};

/**
 * Imports that break the rule today, each with the reason it stays for now ("file → target").
 * Empty: keep it so. A new entry needs a comment saying why and what would remove it.
 */
const ALLOWED: string[] = [];

const SOURCE = /\.(ts|tsx|mts|js|mjs)$/;
/** `import … from "x"`, `export … from "x"`, `import "x"` and `import("x")`; the specifier is group 1. */
const SPECIFIERS = [/\bfrom\s*["']([^"']+)["']/g, /\bimport\s*["']([^"']+)["']/g, /\bimport\s*\(\s*["']([^"']+)["']\s*\)/g];

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && SOURCE.test(entry.name) && !entry.parentPath.includes("node_modules"))
    .map((entry) => relative(ROOT, join(entry.parentPath, entry.name)));
}

/** The repository paths a file imports through relative specifiers (packages are not layers here). */
function relativeImports(file: string): string[] {
  const text = readFileSync(join(ROOT, file), "utf8");
  const targets = new Set<string>();
  for (const pattern of SPECIFIERS) {
    for (const [, specifier] of text.matchAll(pattern)) {
      if (specifier.startsWith(".")) targets.add(relative(ROOT, resolve(ROOT, dirname(file), specifier)));
    }
  }
  return [...targets];
}

function violations(): string[] {
  const found: string[] = [];
  for (const [layer, forbidden] of Object.entries(FORBIDDEN)) {
    for (const file of sourceFiles(layer)) {
      for (const target of relativeImports(file)) {
        if (forbidden.includes(target.split("/")[0])) found.push(`${file} → ${target}`);
      }
    }
  }
  return found.sort();
}

describe("the layering rule", () => {
  it("finds the imports it checks (the scan itself works)", () => {
    expect(relativeImports("worker/routes/operator.ts")).toContain("worker/operator/keys.ts");
    expect(relativeImports("worker/routes/operator.ts")).toContain("schema/db.ts");
  });

  it("holds: no layer imports from one it must not, beyond the named exceptions", () => {
    expect(violations().filter((violation) => !ALLOWED.includes(violation))).toEqual([]);
  });

  it("names no exception that no longer exists", () => {
    const found = violations();
    expect(ALLOWED.filter((exception) => !found.includes(exception))).toEqual([]);
  });
});
