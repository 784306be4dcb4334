// The layering rule, read from the imports: deployed worker code, the GPU runner and the client each
// stand on schema/ and common/ alone (and their own folder), never on one another, the scripts,
// the tests or the benchmarks; schema/ and common/ stand on nothing above them. A violation is
// reported as "file → target".
import { describe, expect, it } from "vitest";
import { relativeImports, sourceFiles } from "./imports.ts";

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
