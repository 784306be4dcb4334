// No import circles among the repository's own TypeScript files. A circle makes module evaluation
// order depend on which file is loaded first (a value read before its module ran is undefined), and
// it says two files are one piece split in two: the shared part belongs in a file both import. Each
// circle is reported as the files it passes through, "a.ts → b.ts → a.ts"; type-only imports count
// too, since they tie the files together just the same.
import { describe, expect, it } from "vitest";
import { relativeImports, sourceFiles } from "./imports.ts";

/** The folders whose files are the repository's own code (root-level config files import nothing of it). */
const FOLDERS = ["bench", "client", "common", "gpu-runner", "schema", "scripts", "test", "worker"];

/**
 * Every TypeScript file's imports of other files in the graph. The dashboard's browser JavaScript
 * is left out: its JSDoc type references (`@typedef {import("./viewer.js").Cell}`) name modules in
 * comments, which the scan cannot tell from imports that run.
 */
function importGraph(): Map<string, string[]> {
  const files = FOLDERS.flatMap(sourceFiles).filter((file) => /\.tsx?$/.test(file));
  const known = new Set(files);
  return new Map(files.map((file) => [file, relativeImports(file).filter((target) => known.has(target))]));
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
      const frame = work[work.length - 1];
      const targets = graph.get(frame.file) ?? [];
      if (frame.next < targets.length) {
        const target = targets[frame.next++];
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
        const parent = work[work.length - 1].file;
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
  return groups.map((group) => shortestCircle(graph, group)).sort((a, b) => a[0].localeCompare(b[0]));
}

/** Breadth-first from the group's first file, inside the group, back to that file. */
function shortestCircle(graph: Map<string, string[]>, group: string[]): string[] {
  const members = new Set(group);
  const start = group[0];
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

  it("finds none among the repository's own files", () => {
    const circles = importCycles(importGraph()).map((circle) => circle.join(" → "));
    expect(circles).toEqual([]);
  });
});
