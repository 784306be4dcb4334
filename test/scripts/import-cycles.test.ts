// No import circles among the repository's own files. A circle makes module evaluation order depend
// on which file is loaded first (a value read before its module ran is undefined), and it says two
// files are one piece split in two: the shared part belongs in a file both import. Each circle is
// reported as the files it passes through, "a.ts → b.ts → a.ts"; type-only imports count too, since
// they tie the files together just the same. Imports are read and resolved as the compiler does
// (./imports.ts), so "./b" and "./b.js" are edges like "./b.ts"; a relative import that names no
// file is the layering test's to report.
import { rmSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { FOLDERS, imports, plantRepository, ROOT, sourceFiles } from "./imports.ts";

/**
 * Every source file's imports of the repository's own source files. A worker-thread or child-process
 * entry point (`new URL("./x.ts", import.meta.url)`) is no edge: it is evaluated in a module graph of
 * its own, so it cannot be read half-run from the file that starts it.
 */
function importGraph(root: string): Map<string, string[]> {
  const files = FOLDERS.flatMap((folder) => sourceFiles(root, folder));
  const known = new Set(files);
  return new Map(
    files.map((file) => [
      file,
      [...new Set(imports(root, file).flatMap(({ file: target, kind }) => (target && kind !== "entry" && known.has(target) ? [target] : [])))],
    ]),
  );
}

/**
 * One circle per strongly connected group of files (Tarjan's algorithm, iterative so a deep chain
 * cannot overflow the stack), shown as the shortest path from the group's first file back to itself.
 */
function importCycles(graph: Map<string, string[]>): string[][] {
  const order = new Map<string, number>();
  const lowest = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const groups: string[][] = [];
  for (const start of [...graph.keys()].sort()) {
    if (order.has(start)) continue;
    const work: { file: string; next: number }[] = [{ file: start, next: 0 }];
    order.set(start, order.size);
    lowest.set(start, order.get(start)!);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      const targets = graph.get(frame.file) ?? [];
      if (frame.next < targets.length) {
        const target = targets[frame.next++]!;
        if (!order.has(target)) {
          order.set(target, order.size);
          lowest.set(target, order.get(target)!);
          stack.push(target);
          onStack.add(target);
          work.push({ file: target, next: 0 });
        } else if (onStack.has(target)) {
          lowest.set(frame.file, Math.min(lowest.get(frame.file)!, order.get(target)!));
        }
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1]!.file;
        lowest.set(parent, Math.min(lowest.get(parent)!, lowest.get(frame.file)!));
      }
      if (lowest.get(frame.file) === order.get(frame.file)) {
        const group: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          group.push(member);
        } while (member !== frame.file);
        if (group.length > 1 || targets.includes(frame.file)) groups.push(group.sort());
      }
    }
  }
  // A circle starts with its group's first file.
  return groups.map((group) => shortestCircle(graph, group)).sort((a, b) => a[0]!.localeCompare(b[0]!));
}

/** Breadth-first from the group's first file, inside the group, back to that file. */
function shortestCircle(graph: Map<string, string[]>, group: string[]): string[] {
  const members = new Set(group);
  // A group holds at least the file that closed it.
  const start = group[0]!;
  const cameFrom = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const file = queue.shift()!;
    for (const target of graph.get(file) ?? []) {
      if (!members.has(target)) continue;
      if (target === start) {
        const between: string[] = [];
        for (let at = file; at !== start; at = cameFrom.get(at)!) between.unshift(at);
        return [start, ...between, start];
      }
      if (!cameFrom.has(target)) {
        cameFrom.set(target, file);
        queue.push(target);
      }
    }
  }
  return [start, start];
}

describe("import cycles", () => {
  it("finds a circle when there is one (the finder itself works)", () => {
    const graph = new Map([
      ["a.ts", ["b.ts"]],
      ["b.ts", ["c.ts", "d.ts"]],
      ["c.ts", ["a.ts"]],
      ["d.ts", []],
      ["e.ts", ["e.ts"]],
    ]);
    expect(importCycles(graph)).toEqual([
      ["a.ts", "b.ts", "c.ts", "a.ts"],
      ["e.ts", "e.ts"],
    ]);
    expect(
      importCycles(
        new Map([
          ["a.ts", ["b.ts"]],
          ["b.ts", []],
        ]),
      ),
    ).toEqual([]);
  });

  describe("in a throwaway tree", () => {
    const root = plantRepository({
      // A circle with no .ts written anywhere: a .js suffix, a folder for its index, no extension.
      "common/a.ts": 'import type { B } from "./b.js";\nexport type A = B[];',
      "common/b.ts": 'import { c } from "./c";\nexport type B = typeof c;',
      "common/c/index.ts": 'import type { A } from "../a";\nexport const c: A = [];',
      // A file that starts a worker thread the worker imports back: two module graphs, no circle.
      "gpu-runner/thread.ts": 'export const start = () => new URL("./thread-worker.ts", import.meta.url);',
      "gpu-runner/thread-worker.ts": 'import { start } from "./thread.ts";\nexport const again = start;',
    });
    afterAll(() => rmSync(root, { recursive: true, force: true }));

    it("finds a circle of extension-less, .js-suffixed and folder imports, and none through a worker-thread entry point", () => {
      expect(importCycles(importGraph(root))).toEqual([["common/a.ts", "common/b.ts", "common/c/index.ts", "common/a.ts"]]);
    });
  });

  it("finds none among the repository's own files", () => {
    const circles = importCycles(importGraph(ROOT)).map((circle) => circle.join(" → "));
    expect(circles).toEqual([]);
  });
});
