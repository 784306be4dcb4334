// With noUncheckedIndexedAccess on (tsconfig.json), a non-null assertion (`x!`) is a claim that a
// value the compiler thinks may be missing is there: an index a loop bounds, a lookup just checked.
// One on a value that can never be null or undefined claims nothing and misleads a reader, so none
// may stand. Reported as "file:line text", for every project `npm run typecheck` checks.
import { readFileSync, rmSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import ts from "typescript";
import { afterAll, describe, expect, it } from "vitest";
import { plantRepository, ROOT } from "./imports.ts";

const PROJECTS = ["tsconfig.json", "worker/tsconfig.json", "worker/dashboard/public/tsconfig.json"];

const MAYBE_MISSING = ts.TypeFlags.Undefined | ts.TypeFlags.Null | ts.TypeFlags.Void | ts.TypeFlags.Any | ts.TypeFlags.Unknown;

/** Whether a value of this type may be null or undefined (a type parameter may be either). */
function mayBeMissing(type: ts.Type): boolean {
  if (type.isUnion()) return type.types.some(mayBeMissing);
  return (type.flags & (MAYBE_MISSING | ts.TypeFlags.TypeParameter | ts.TypeFlags.TypeVariable)) !== 0;
}

function needlessAssertions(root: string, projects: string[]): string[] {
  const found = new Set<string>();
  for (const project of projects) {
    const path = join(root, project);
    const { config } = ts.readConfigFile(path, (file) => readFileSync(file, "utf8"));
    const parsed = ts.parseJsonConfigFileContent(config, ts.sys, dirname(path), undefined, path);
    const program = ts.createProgram(parsed.fileNames, parsed.options);
    const checker = program.getTypeChecker();
    for (const source of program.getSourceFiles()) {
      if (source.isDeclarationFile || source.fileName.includes("/node_modules/")) continue;
      const visit = (node: ts.Node): void => {
        if (ts.isNonNullExpression(node) && !mayBeMissing(checker.getTypeAtLocation(node.expression))) {
          const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
          found.add(`${relative(root, source.fileName)}:${line} ${node.getText(source)}`);
        }
        ts.forEachChild(node, visit);
      };
      visit(source);
    }
  }
  return [...found].sort();
}

describe("non-null assertions", () => {
  it("stand only where a value may be missing", () => {
    expect(needlessAssertions(ROOT, PROJECTS)).toEqual([]);
  }, 120_000);
});

describe("the non-null check, on a planted tree", () => {
  const root = plantRepository({
    "common/claims.ts": [
      "const counts = new Uint32Array(4);",
      "export const first = counts[0]!; // an index: may be past the end",
      "const found = new Map<string, number>().get('a');",
      "export const looked = found!; // a lookup",
      "export const sure = (5 as number)!; // claims nothing",
      "export function generic<T>(value: T) {",
      "  return value!; // T may be undefined",
      "}",
    ].join("\n"),
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it("reports an assertion on a value that cannot be missing, and only that one", () => {
    expect(needlessAssertions(root, ["tsconfig.json"])).toEqual(["common/claims.ts:5 (5 as number)!"]);
  }, 60_000);
});
