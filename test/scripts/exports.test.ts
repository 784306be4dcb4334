// What a file exports is what some other file takes. An export no file imports is dead: it goes,
// or stops being exported. An export that only tests import says so on the line above it
// ("// Exported for its test only (test/...)."), so a reader of the code knows that nothing else
// depends on it; a mark on an export that code outside test/ imports is stale and goes. Reported
// as "file name".
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";
import { afterAll, describe, expect, it } from "vitest";
import { FOLDERS, imports, plantRepository, ROOT, sourceFiles } from "./imports.ts";

/** Exports that are entry points: what wrangler loads (wrangler.toml's `main`). */
const ENTRY_POINTS = ["worker/index.ts default"];

const TEST_ONLY_MARK = /^\/\/ Exported for its tests? only \(/;

interface Exported {
  name: string;
  /** Its line's index in the file: where a mark above it is looked for. */
  line: number;
  /** Re-exported from another file (`export { a } from "./a.ts"`): the importers could take it from there. */
  forwarded: boolean;
}

/** The names a file exports at its top level, with where each is declared. */
function exportsOf(root: string, file: string): Exported[] {
  const text = readFileSync(join(root, file), "utf8");
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const lineOf = (node: ts.Node) => source.getLineAndCharacterOfPosition(node.getStart(source)).line;
  const found: Exported[] = [];
  for (const statement of source.statements) {
    if (ts.isExportDeclaration(statement) && statement.exportClause && ts.isNamedExports(statement.exportClause)) {
      for (const element of statement.exportClause.elements) {
        found.push({ name: element.name.text, line: lineOf(statement), forwarded: statement.moduleSpecifier !== undefined });
      }
    } else if (ts.isExportAssignment(statement)) {
      found.push({ name: "default", line: lineOf(statement), forwarded: false });
    } else if (ts.canHaveModifiers(statement) && ts.getModifiers(statement)?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword)) {
      const isDefault = ts.getModifiers(statement)?.some((m) => m.kind === ts.SyntaxKind.DefaultKeyword);
      for (const name of isDefault ? ["default"] : declaredNames(statement)) found.push({ name, line: lineOf(statement), forwarded: false });
    }
  }
  return found;
}

function declaredNames(statement: ts.Statement): string[] {
  if (ts.isVariableStatement(statement)) {
    return statement.declarationList.declarations.flatMap((d) => (ts.isIdentifier(d.name) ? [d.name.text] : []));
  }
  const { name } = statement as ts.DeclarationStatement;
  return name && ts.isIdentifier(name) ? [name.text] : [];
}

/** Whether the comment lines just above a declaration (above its JSDoc, if any) carry the mark. */
function isMarked(lines: string[], line: number): boolean {
  let above = line - 1;
  if (lines[above]?.trim().endsWith("*/")) {
    while (above >= 0 && !lines[above]?.trim().startsWith("/**")) above--;
    above--;
  }
  for (; above >= 0 && lines[above]?.trim().startsWith("//"); above--) {
    if (TEST_ONLY_MARK.test(lines[above]?.trim() ?? "")) return true;
  }
  return false;
}

interface Findings {
  dead: string[];
  unmarked: string[];
  stale: string[];
}

function checkExports(root: string): Findings {
  const files = FOLDERS.flatMap((folder) => sourceFiles(root, folder));
  /** "file name" → the files importing that name from that file ("file *" for all its names). */
  const takers = new Map<string, Set<string>>();
  for (const importer of files) {
    for (const { file, names } of imports(root, importer)) {
      if (!file) continue;
      for (const name of names) {
        const key = `${file} ${name}`;
        takers.set(key, (takers.get(key) ?? new Set()).add(importer));
      }
    }
  }
  const findings: Findings = { dead: [], unmarked: [], stale: [] };
  for (const file of files.filter((f) => !f.startsWith("test/"))) {
    const lines = readFileSync(join(root, file), "utf8").split("\n");
    const everything = takers.get(`${file} *`) ?? new Set<string>();
    for (const { name, line, forwarded } of exportsOf(root, file)) {
      const key = `${file} ${name}`;
      if (ENTRY_POINTS.includes(key)) continue;
      const by = [...(takers.get(key) ?? []), ...everything];
      const testsOnly = by.length > 0 && by.every((importer) => importer.startsWith("test/"));
      if (by.length === 0) findings.dead.push(key);
      // A forwarded name cannot carry a mark: its tests import it from the file that declares it.
      else if (testsOnly && (forwarded || !isMarked(lines, line))) findings.unmarked.push(key);
      else if (!testsOnly && !forwarded && isMarked(lines, line)) findings.stale.push(key);
    }
  }
  return findings;
}

describe("the repository's exports", () => {
  const findings = checkExports(ROOT);

  it("are all imported somewhere", () => {
    expect(findings.dead).toEqual([]);
  });

  it("say so where only tests import them", () => {
    expect(findings.unmarked).toEqual([]);
  });

  it("carry no test-only mark where code outside test/ imports them", () => {
    expect(findings.stale).toEqual([]);
  });
});

describe("the export check, on a planted tree", () => {
  const root = plantRepository({
    "common/shapes.ts": [
      "export const used = 1;",
      "export const dead = 2;",
      "export const forTest = 3;",
      "// Exported for its test only (test/shapes.test.ts).",
      "/** A documented constant. */",
      "export const markedForTest = 4;",
      "// Exported for its test only (test/shapes.test.ts).",
      "export function stale() {}",
      "export default 5;",
    ].join("\n"),
    "common/index.ts": 'export { used, forTest as renamed } from "./shapes.ts";\nexport * from "./all.ts";',
    "common/all.ts": "export type Everything = number;",
    "worker/routes/page.ts":
      'import { used } from "../../common/index.ts";\nimport { stale } from "../../common/shapes";\nimport type * as all from "../../common/all.ts";',
    "test/shapes.test.ts": [
      'import { forTest, markedForTest } from "../common/shapes.ts";',
      'import { renamed } from "../common/index.ts";',
      'import five from "../common/shapes.ts";',
    ].join("\n"),
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const findings = checkExports(root);

  it("reports an export nothing imports", () => {
    expect(findings.dead).toEqual(["common/shapes.ts dead"]);
  });

  it("reports a test-only export without the mark, and a forwarded one that only tests take", () => {
    expect(findings.unmarked.sort()).toEqual(["common/index.ts renamed", "common/shapes.ts default"]);
  });

  it("reports a mark on an export that code outside test/ imports", () => {
    expect(findings.stale).toEqual(["common/shapes.ts stale"]);
  });

  it("counts a namespace import or `export *` as taking every name", () => {
    const all = [...findings.dead, ...findings.unmarked, ...findings.stale];
    expect(all.filter((k) => k.startsWith("common/all.ts") || k.startsWith("common/index.ts used"))).toEqual([]);
  });
});
