// The layering rule, read from the imports as the compiler resolves them. Deployed worker code, the
// GPU runner and the client each stand on schema/ and common/ alone (and their own folder), never
// on one another, the scripts, the tests or the benchmarks; common/ stands on schema/ alone, and
// schema/ on nothing of the repository. The worker, and the schema/ and common/ it bundles, run in
// workerd, not Node. Inside worker/, routes stand on services, services on storage and queues,
// never the other way round. A violation is reported as "file → what it imports".
import { rmSync } from "node:fs";
import { isBuiltin } from "node:module";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FOLDERS, imports, isSource, plantRepository, ROOT, sourceFiles } from "./imports.ts";

const APPS = ["worker", "gpu-runner", "client"];
const TOOLS = ["scripts", "test", "bench"];

/** Each layer (a top-level folder) and the top-level folders its files must not import from. */
const FORBIDDEN: Record<string, string[]> = {
  worker: ["gpu-runner", "client", ...TOOLS],
  "gpu-runner": ["worker", "client", ...TOOLS],
  client: ["worker", "gpu-runner", ...TOOLS],
  common: [...APPS, ...TOOLS],
  schema: [...APPS, ...TOOLS, "common"],
};

/**
 * Packages the worker's run-time files must not import ("node:*": any Node builtin, prefixed or
 * not): workerd runs them, nodejs_compat gives it only part of Node, and a native addon cannot load
 * there. The run-time files are worker/'s and every file of schema/ and common/ they reach by an
 * import that stays in the bundle; `import type` is erased, so the runner's and client's Node-only
 * code may share a file whose types the worker uses.
 */
const WORKERD_CANNOT_LOAD = ["node:*", "onnxruntime-node"];

/**
 * The worker's own layers, top to bottom: a file may import its own layer and those below it, never
 * one above. A path ending in "/" is a folder. A worker file in no layer is a violation too, so a
 * new folder gets its place decided.
 */
const WORKER_LAYERS: { name: string; paths: string[] }[] = [
  { name: "entry points", paths: ["worker/index.ts", "worker/app.ts"] },
  // Whatever answers a request or a queue message: the API routes, the dashboard's pages and
  // scripts, the queue consumers.
  { name: "routes", paths: ["worker/routes/", "worker/dashboard/", "worker/consumers/"] },
  { name: "request plumbing", paths: ["worker/middleware/", "worker/openapi/"] },
  { name: "services", paths: ["worker/services/", "worker/operator/", "worker/exports/", "worker/annotations/"] },
  { name: "storage and queues", paths: ["worker/storage/", "worker/queues/"] },
  { name: "foundations", paths: ["worker/env.ts", "worker/errors.ts", "worker/validation.ts"] },
];

/**
 * Imports that break a rule today, each with the reason it stays for now ("file → what it imports").
 * A new entry needs a comment saying why and what would remove it.
 */
const ALLOWED: string[] = [
  // workerd provides node:zlib under nodejs_compat (deflateSync included); the worker's label-TIFF
  // export runs it there (test/worker/export-routes.test.ts). Goes when the writer uses
  // CompressionStream or fflate instead.
  "schema/label-tiff.ts → node:zlib",
  // Same module, inflateSync/inflateRawSync with output limits, run in workerd by the annotation
  // imports (test/worker/annotations/). Goes with a pure-JS bounded inflate (fflate).
  "common/decode/inflate-bounded.ts → node:zlib",
];

function layerOf(file: string): string {
  return file.split("/")[0]!;
}

function workerLayerOf(file: string): number {
  return WORKER_LAYERS.findIndex(({ paths }) => paths.some((path) => (path.endsWith("/") ? file.startsWith(path) : file === path)));
}

/** The package a specifier names: "hono/jsx" → "hono", "@scope/name/x" → "@scope/name". */
function packageName(specifier: string): string {
  return specifier
    .split("/")
    .slice(0, specifier.startsWith("@") ? 2 : 1)
    .join("/");
}

function isForbiddenPackage(specifier: string, forbidden: string[]): boolean {
  return forbidden.some((name) => (name === "node:*" ? isBuiltin(specifier) : packageName(specifier) === name));
}

/** Imports of a top-level folder the importing layer must not stand on. */
function layerViolations(root: string): string[] {
  return Object.entries(FORBIDDEN).flatMap(([layer, forbidden]) =>
    sourceFiles(root, layer).flatMap((file) =>
      imports(root, file)
        .filter(({ file: target }) => target && forbidden.includes(layerOf(target)))
        .map(({ file: target }) => `${file} → ${target}`),
    ),
  );
}

/** worker/'s files and every repository file they reach by an import that is not erased. */
function workerRuntimeFiles(root: string): string[] {
  const reached = new Set(sourceFiles(root, "worker"));
  for (const file of reached) {
    for (const { file: target, kind } of imports(root, file)) if (target && isSource(target) && kind !== "type") reached.add(target);
  }
  return [...reached];
}

/** Imports of a package workerd cannot load, by the files it runs. */
function packageViolations(root: string): string[] {
  return workerRuntimeFiles(root).flatMap((file) =>
    imports(root, file)
      .filter((found) => found.file === undefined && isForbiddenPackage(found.specifier, WORKERD_CANNOT_LOAD))
      .map(({ specifier }) => `${file} → ${specifier}`),
  );
}

/** Imports inside worker/ of a layer above the importer's, and worker files in no layer. */
function workerOrderViolations(root: string): string[] {
  return sourceFiles(root, "worker").flatMap((file) => {
    const own = workerLayerOf(file);
    if (own === -1) return [`${file} (in no layer of worker/)`];
    return imports(root, file)
      .filter(({ file: target }) => target?.startsWith("worker/") && workerLayerOf(target) !== -1 && workerLayerOf(target) < own)
      .map(({ file: target }) => `${file} → ${target}`);
  });
}

/** Relative imports that name no file: an import the other checks could not follow. */
function unresolvedImports(root: string): string[] {
  return FOLDERS.flatMap((folder) => sourceFiles(root, folder)).flatMap((file) =>
    imports(root, file)
      .filter((found) => found.file === null)
      .map(({ specifier }) => `${file} → ${specifier} (names no file in the repository)`),
  );
}

function violations(root: string): string[] {
  return [...layerViolations(root), ...packageViolations(root), ...workerOrderViolations(root), ...unresolvedImports(root)].sort();
}

describe("reading imports", () => {
  const root = plantRepository({
    "worker/all-forms.ts": [
      'import { a } from "./a.ts";',
      'import type { B } from "./b";',
      'export { c } from "./c.js";',
      'export * from "./d/";',
      'const e = await import("./e.ts");',
      'type F = typeof import("./f.ts");',
      'const g = new URL("./g.ts", import.meta.url);',
      'const data = new URL("./data.bin", import.meta.url);',
      'import text from "./notes.txt?raw";',
      'import { Hono } from "hono";',
      'import { open } from "node:fs/promises";',
      "// import { h } from './h.ts';",
    ].join("\n"),
    ...Object.fromEntries(["a", "b", "c", "d/index", "e", "f", "g"].map((name) => [`worker/${name}.ts`, "export {};"])),
    "worker/notes.txt": "notes",
    "worker/data.bin": "",
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it("finds every form of import, resolved as the compiler resolves it, and none in comments or data URLs", () => {
    expect(imports(root, "worker/all-forms.ts")).toEqual([
      { specifier: "./a.ts", kind: "static", names: ["a"], file: "worker/a.ts" },
      { specifier: "./b", kind: "type", names: ["B"], file: "worker/b.ts" },
      { specifier: "./c.js", kind: "static", names: ["c"], file: "worker/c.ts" },
      { specifier: "./d/", kind: "static", names: ["*"], file: "worker/d/index.ts" },
      { specifier: "./e.ts", kind: "dynamic", names: ["*"], file: "worker/e.ts" },
      { specifier: "./f.ts", kind: "type", names: ["*"], file: "worker/f.ts" },
      { specifier: "./g.ts", kind: "entry", names: ["*"], file: "worker/g.ts" },
      { specifier: "./notes.txt?raw", kind: "static", names: ["default"], file: "worker/notes.txt" },
      { specifier: "hono", kind: "static", names: ["Hono"] },
      { specifier: "node:fs/promises", kind: "static", names: ["open"] },
    ]);
  });

  it("reads the real tree: a route's imports of its own layer's folders and of schema/", () => {
    const targets = imports(ROOT, "worker/routes/operator.ts").map(({ file }) => file);
    expect(targets).toContain("worker/operator/keys.ts");
    expect(targets).toContain("schema/db.ts");
  });
});

describe("the checks report each kind of violation planted in a throwaway tree", () => {
  const root = plantRepository({
    "client/main.ts": "export const client = 1;",
    "common/util.ts": "export const util = 1;",
    "common/local-file.ts": 'import { open } from "node:fs/promises";\nexport type Source = { size: number };\nexport const local = open;',
    "common/deflate.ts": 'import { deflateSync } from "node:zlib";\nexport const deflate = deflateSync;',
    "schema/db.ts": 'import { util } from "../common/util";\nexport const db = util;',
    "gpu-runner/runner.ts": 'import { client } from "../client/main.ts";\nexport const runner = client;',
    "worker/routes/page.ts": [
      'import { client } from "../../client/main";',
      'import * as ort from "onnxruntime-node";',
      'import { readFile } from "node:fs";',
      'import { readdir } from "fs";',
      'import { db } from "../../schema/db.ts";',
      "export const page = [client, ort, readFile, readdir, db];",
    ].join("\n"),
    "worker/queues/queue.ts": 'import { page } from "../routes/page.ts";\nexport const queue = page;',
    "worker/storage/store.ts": [
      'import type { Source } from "../../common/local-file.ts";',
      'import { deflate } from "../../common/deflate.ts";',
      "export const store = (source: Source) => deflate(new Uint8Array(source.size));",
    ].join("\n"),
    "worker/services/jobs.ts": 'import { queue } from "../queues/queue.ts";\nimport { gone } from "./gone";\nexport const jobs = [queue, gone];',
    "worker/elsewhere/stray.ts": "export {};",
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it("reports the worker importing the client", () => {
    expect(layerViolations(root)).toContain("worker/routes/page.ts → client/main.ts");
  });

  it("reports the GPU runner importing the client", () => {
    expect(layerViolations(root)).toContain("gpu-runner/runner.ts → client/main.ts");
  });

  it("reports schema/ importing common/ (schema is the floor)", () => {
    expect(layerViolations(root)).toContain("schema/db.ts → common/util.ts");
  });

  it("reports the worker importing onnxruntime-node and Node builtins, with the node: prefix or without", () => {
    const found = packageViolations(root);
    expect(found).toContain("worker/routes/page.ts → onnxruntime-node");
    expect(found).toContain("worker/routes/page.ts → node:fs");
    expect(found).toContain("worker/routes/page.ts → fs");
  });

  it("reports a Node builtin in common/ that the worker runs, not one it only takes types from", () => {
    expect(packageViolations(root)).toContain("common/deflate.ts → node:zlib");
    expect(packageViolations(root)).not.toContain("common/local-file.ts → node:fs/promises");
  });

  it("reports an import upward inside the worker (queues → routes) and a worker file in no layer", () => {
    expect(workerOrderViolations(root)).toEqual(["worker/elsewhere/stray.ts (in no layer of worker/)", "worker/queues/queue.ts → worker/routes/page.ts"]);
  });

  it("reports a relative import that names no file, rather than dropping it", () => {
    expect(unresolvedImports(root)).toEqual(["worker/services/jobs.ts → ./gone (names no file in the repository)"]);
  });

  it("reports nothing more: imports downward (services → queues, the worker → schema/) pass", () => {
    expect(violations(root)).toEqual([
      "common/deflate.ts → node:zlib",
      "gpu-runner/runner.ts → client/main.ts",
      "schema/db.ts → common/util.ts",
      "worker/elsewhere/stray.ts (in no layer of worker/)",
      "worker/queues/queue.ts → worker/routes/page.ts",
      "worker/routes/page.ts → client/main.ts",
      "worker/routes/page.ts → fs",
      "worker/routes/page.ts → node:fs",
      "worker/routes/page.ts → onnxruntime-node",
      "worker/services/jobs.ts → ./gone (names no file in the repository)",
    ]);
  });
});

describe("the layering rule", () => {
  let found: string[] = [];
  beforeAll(() => {
    found = violations(ROOT);
  });

  it("holds: no layer imports a folder or package it must not, beyond the named exceptions", () => {
    expect(found.filter((violation) => !ALLOWED.includes(violation))).toEqual([]);
  });

  it("names no exception that no longer exists", () => {
    expect(ALLOWED.filter((exception) => !found.includes(exception))).toEqual([]);
  });
});
