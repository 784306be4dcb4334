// A repository's import graph as the TypeScript compiler reads it: which source files there are,
// and what each imports, every specifier resolved the way tsc resolves it under the root's
// tsconfig.json, so "./x", "./x.js" and "../dir/" name the same files they name to the compiler.
// Shared by the layering test and the import-cycle test, so both read imports alike. Every function
// takes the repository root, so the checks can prove themselves on a planted tree.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import ts from "typescript";

// Real paths, since the compiler reports resolved files through symbolic links followed.
export const ROOT = realpathSync(resolve(import.meta.dirname, "../.."));

/** The folders that hold the repository's own code (root-level config files import none of it). */
export const FOLDERS = ["bench", "client", "common", "gpu-runner", "schema", "scripts", "test", "worker"];

export interface Import {
  /** The specifier as written: "./x.ts", "../common", "node:fs", "hono/jsx". */
  specifier: string;
  /**
   * How the file depends on it. "entry" is `new URL("./x.ts", import.meta.url)`: a file started
   * apart from the importer (a worker thread, a child process), in a module graph of its own.
   */
  kind: "static" | "dynamic" | "type" | "entry";
  /**
   * The exported names it takes: "default" for a default import, "*" for all of them (a namespace
   * import, `export *`, a dynamic import, an entry, a type import without a name).
   */
  names: string[];
  /**
   * The repository file it names (root-relative, "/"-separated); null when a relative specifier
   * names no file; absent for a package (anything resolved outside the repository or not at all).
   */
  file?: string | null;
}

const SOURCE = /\.(ts|tsx|mts|cts|js|jsx|mjs|cjs)$/;

/** Whether a repository path is code (an import may also name a data file: `./golden.csv?raw`). */
export function isSource(file: string): boolean {
  return SOURCE.test(file);
}
const SKIPPED_FOLDERS = ["node_modules", ".git", ".wrangler"];

/** Source files under `dir` (root-relative, sorted), outside node_modules and tool state. */
export function sourceFiles(root: string, dir: string): string[] {
  if (!existsSync(join(root, dir))) return [];
  return readdirSync(join(root, dir), { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && SOURCE.test(entry.name))
    .map((entry) => repositoryPath(root, join(entry.parentPath, entry.name)))
    .filter((file) => !file.split("/").some((part) => SKIPPED_FOLDERS.includes(part)))
    .sort();
}

const read = new Map<string, Import[]>();

/** Every import a file makes, in source order (read once per test run: several checks ask). */
export function imports(root: string, file: string): Import[] {
  const path = join(root, file);
  if (!read.has(path)) {
    const resolver = resolverFor(root);
    read.set(
      path,
      specifiers(path).map((found) => ({ ...found, ...resolver(file, found.specifier) })),
    );
  }
  return read.get(path)!;
}

/**
 * A throwaway repository laid out from `files` (root-relative path → text) under the system's
 * temporary folder, with the real tsconfig.json unless `files` brings its own: where the checks
 * plant the violations they must report, without touching the real tree.
 */
export function plantRepository(files: Record<string, string>): string {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "layer-checks-")));
  const all = { "tsconfig.json": readFileSync(join(ROOT, "tsconfig.json"), "utf8"), ...files };
  for (const [path, text] of Object.entries(all)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

/**
 * The specifiers in a file's syntax tree. Comments are not part of it, so JSDoc type references
 * in the dashboard's browser JavaScript (`@typedef {import("./viewer.js").Cell}`) are not read:
 * they name modules for the type checker alone.
 */
function specifiers(path: string): Omit<Import, "file">[] {
  const source = ts.createSourceFile(path, readFileSync(path, "utf8"), ts.ScriptTarget.Latest, true);
  const found: Omit<Import, "file">[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const kind = node.importClause?.isTypeOnly ? "type" : "static";
      found.push({ specifier: node.moduleSpecifier.text, kind, names: importedNames(node.importClause) });
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      const names = node.exportClause && ts.isNamedExports(node.exportClause) ? node.exportClause.elements.map(nameAtSource) : ["*"];
      found.push({ specifier: node.moduleSpecifier.text, kind: node.isTypeOnly ? "type" : "static", names });
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      const names = node.qualifier ? [ts.isIdentifier(node.qualifier) ? node.qualifier.text : firstName(node.qualifier)] : ["*"];
      found.push({ specifier: node.argument.literal.text, kind: "type", names });
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [argument] = node.arguments;
      if (argument && ts.isStringLiteralLike(argument)) found.push({ specifier: argument.text, kind: "dynamic", names: ["*"] });
    } else if (ts.isNewExpression(node) && isModuleUrl(node)) {
      found.push({ specifier: (node.arguments![0] as ts.StringLiteralLike).text, kind: "entry", names: ["*"] });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function importedNames(clause: ts.ImportClause | undefined): string[] {
  if (!clause) return []; // `import "./x.ts"`: run for its effects, no name taken
  const names = clause.name ? ["default"] : [];
  const bindings = clause.namedBindings;
  if (bindings && ts.isNamespaceImport(bindings)) names.push("*");
  else if (bindings) names.push(...bindings.elements.map(nameAtSource));
  return names;
}

/** The name an import or export specifier has in the module it names (`a` of `a as b`). */
function nameAtSource(element: ts.ImportSpecifier | ts.ExportSpecifier): string {
  return (element.propertyName ?? element.name).text;
}

/** `Outer` of `import("./x").Outer.Inner`. */
function firstName(name: ts.EntityName): string {
  return ts.isIdentifier(name) ? name.text : firstName(name.left);
}

/** `new URL("./x.ts", import.meta.url)` naming a source file (a URL of a folder or a data file is no import). */
function isModuleUrl(node: ts.NewExpression): boolean {
  const [target, base] = node.arguments ?? [];
  return (
    ts.isIdentifier(node.expression) &&
    node.expression.text === "URL" &&
    target !== undefined &&
    ts.isStringLiteralLike(target) &&
    SOURCE.test(target.text) &&
    base !== undefined &&
    base.getText() === "import.meta.url"
  );
}

const resolvers = new Map<string, (file: string, specifier: string) => Pick<Import, "file">>();

/**
 * Resolves specifiers as tsc does under the root's tsconfig.json, with JavaScript allowed so the
 * browser scripts' imports resolve too. A bundler-style query (`./golden.csv?raw`) names the file
 * before it, and a data file that exists resolves to itself.
 */
function resolverFor(root: string): (file: string, specifier: string) => Pick<Import, "file"> {
  const cached = resolvers.get(root);
  if (cached) return cached;
  const configPath = join(root, "tsconfig.json");
  const { config } = ts.readConfigFile(configPath, ts.sys.readFile);
  const options = { ...ts.parseJsonConfigFileContent(config ?? {}, ts.sys, root, undefined, configPath).options, allowJs: true };
  const cache = ts.createModuleResolutionCache(root, (name) => name, options);
  const resolver = (file: string, specifier: string): Pick<Import, "file"> => {
    const importer = join(root, file);
    const name = specifier.replace(/\?.*$/, "");
    const resolved = ts.resolveModuleName(name, importer, options, ts.sys, cache).resolvedModule?.resolvedFileName;
    if (resolved && isInside(root, resolved)) return { file: repositoryPath(root, resolved) };
    const relativeName = name.startsWith(".") || isAbsolute(name);
    if (!relativeName) return {};
    const dataFile = resolve(dirname(importer), name);
    return { file: existsSync(dataFile) && statSync(dataFile).isFile() && isInside(root, dataFile) ? repositoryPath(root, dataFile) : null };
  };
  resolvers.set(root, resolver);
  return resolver;
}

function isInside(root: string, path: string): boolean {
  const inRoot = relative(root, path);
  return !inRoot.startsWith("..") && !isAbsolute(inRoot) && !inRoot.split(sep).includes("node_modules");
}

function repositoryPath(root: string, path: string): string {
  return relative(root, path).split(sep).join("/");
}
