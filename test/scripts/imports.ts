// The repository's own import graph, read from the source text: which files there are and which
// repository files each imports through relative specifiers (packages are not part of it). Shared
// by the layering test and the import-cycle test, so both read imports alike.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

export const ROOT = resolve(import.meta.dirname, "../..");

const SOURCE = /\.(ts|tsx|mts|js|mjs)$/;
/** `import … from "x"`, `export … from "x"`, `import "x"` and `import("x")`; the specifier is group 1. */
const SPECIFIERS = [/\bfrom\s*["']([^"']+)["']/g, /\bimport\s*["']([^"']+)["']/g, /\bimport\s*\(\s*["']([^"']+)["']\s*\)/g];
const SKIPPED_FOLDERS = ["node_modules", ".git", ".wrangler"];

/** Source files under `dir` (repository-relative), outside node_modules and tool state. */
export function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && SOURCE.test(entry.name))
    .map((entry) => relative(ROOT, join(entry.parentPath, entry.name)))
    .filter((file) => !file.split("/").some((part) => SKIPPED_FOLDERS.includes(part)));
}

/** The repository paths a file imports through relative specifiers, query suffixes (`?raw`) dropped. */
export function relativeImports(file: string): string[] {
  const text = readFileSync(join(ROOT, file), "utf8");
  const targets = new Set<string>();
  for (const pattern of SPECIFIERS) {
    for (const [, specifier] of text.matchAll(pattern)) {
      if (specifier.startsWith(".")) targets.add(relative(ROOT, resolve(ROOT, dirname(file), specifier.split("?")[0])));
    }
  }
  return [...targets];
}
