// The viewer's unsaved corrections and their undo history (assets/corrections.js), as data: the
// browser test (test/e2e/dashboard.test.ts) clicks through the editor; this one checks each step.
import { describe, expect, it } from "vitest";
// The page's script is plain JS, type-checked from its JSDoc by tsc -p worker/dashboard/public, not here.
// @ts-expect-error TS7016: the worker's tsconfig reads no JavaScript, so the module has no types here
import * as script from "../../worker/dashboard/public/dashboard/assets/corrections.js";

type RoiIndex = number | string;
type Cell = { props: { roi_index: RoiIndex }; drawn?: boolean };
type Step = { kind: "delete" | "add" | "remove"; cell: Cell };
interface Corrections {
  readonly drawn: readonly Cell[];
  readonly deletedCount: number;
  readonly dirty: boolean;
  readonly canUndo: boolean;
  readonly canRedo: boolean;
  isDeleted(roiIndex: RoiIndex): boolean;
  summary(): string;
  cellCount(stored: number): number;
  delete(cell: Cell): void;
  add(cell: Cell): void;
  undo(): Step | undefined;
  redo(): Step | undefined;
  restore(deleted: Iterable<RoiIndex>, drawn: Iterable<Cell>): void;
  discard(): void;
  saved(): void;
}
const CorrectionsOf: new (deleted: Set<RoiIndex>, changed: (roiIndex: RoiIndex) => void) => Corrections = script.Corrections;
const makesACell: (corners: [number, number][]) => boolean = script.makesACell;

/** Corrections over a viewer's set of deleted cells, with the tiles it was told to redraw. */
function editing() {
  const hidden = new Set<RoiIndex>();
  const redrawn: RoiIndex[] = [];
  const corrections = new CorrectionsOf(hidden, (roiIndex) => redrawn.push(roiIndex));
  return { hidden, redrawn, corrections };
}
const stored = (roiIndex: number): Cell => ({ props: { roi_index: roiIndex } });
const drawn = (n: number): Cell => ({ props: { roi_index: `new ${n}` }, drawn: true });

describe("the viewer's corrections", () => {
  it("start with nothing to save, undo or redo", () => {
    const { corrections } = editing();
    expect(corrections.dirty).toBe(false);
    expect([corrections.canUndo, corrections.canRedo]).toEqual([false, false]);
    expect(corrections.summary()).toBe("No corrections yet.");
    expect(corrections.cellCount(120)).toBe(120);
    expect(corrections.undo()).toBeUndefined();
    expect(corrections.redo()).toBeUndefined();
  });

  it("delete a stored cell by hiding it in the viewer's set, and tell the viewer which tile to redraw", () => {
    const { hidden, redrawn, corrections } = editing();
    corrections.delete(stored(7));
    expect([...hidden]).toEqual([7]);
    expect(redrawn).toEqual([7]);
    expect(corrections.isDeleted(7)).toBe(true);
    expect(corrections.summary()).toBe("Unsaved: 1 deleted.");
    expect(corrections.cellCount(120)).toBe(119);
  });

  it("remove a drawn cell from the drawn ones rather than hiding it", () => {
    const { hidden, corrections } = editing();
    const cell = drawn(1);
    corrections.add(cell);
    corrections.delete(cell);
    expect(corrections.drawn).toEqual([]);
    expect(hidden.size).toBe(0);
    expect(corrections.undo()).toEqual({ kind: "remove", cell });
    expect(corrections.drawn).toEqual([cell]);
  });

  it("undo steps last first and redo them in order", () => {
    const { hidden, corrections } = editing();
    const a = drawn(1);
    corrections.delete(stored(3));
    corrections.add(a);
    corrections.delete(stored(5));
    expect(corrections.summary()).toBe("Unsaved: 2 deleted, 1 drawn.");

    expect(corrections.undo()?.kind).toBe("delete");
    expect([...hidden]).toEqual([3]);
    expect(corrections.undo()).toEqual({ kind: "add", cell: a });
    expect(corrections.drawn).toEqual([]);
    expect(corrections.canRedo).toBe(true);

    expect(corrections.redo()).toEqual({ kind: "add", cell: a });
    expect(corrections.drawn).toEqual([a]);
    expect(corrections.redo()?.cell).toEqual(stored(5));
    expect([...hidden].sort()).toEqual([3, 5]);
    expect(corrections.canRedo).toBe(false);
    expect(corrections.cellCount(10)).toBe(9);
  });

  it("forget what was undone once a new step is taken", () => {
    const { corrections } = editing();
    corrections.delete(stored(1));
    corrections.undo();
    expect(corrections.canRedo).toBe(true);
    corrections.add(drawn(1));
    expect(corrections.canRedo).toBe(false);
    expect(corrections.redo()).toBeUndefined();
  });

  it("undo everything back to no corrections", () => {
    const { corrections } = editing();
    corrections.delete(stored(1));
    corrections.add(drawn(1));
    while (corrections.canUndo) corrections.undo();
    expect(corrections.dirty).toBe(false);
    expect(corrections.summary()).toBe("No corrections yet.");
  });

  it("bring back corrections kept from a last visit, which can be discarded but not undone", () => {
    const { hidden, redrawn, corrections } = editing();
    corrections.restore([4, 9], [drawn(1), drawn(2)]);
    expect([...hidden]).toEqual([4, 9]);
    expect(redrawn).toEqual([4, 9]);
    expect(corrections.summary()).toBe("Unsaved: 2 deleted, 2 drawn.");
    expect(corrections.canUndo).toBe(false);

    corrections.discard();
    expect(hidden.size).toBe(0);
    expect(redrawn).toEqual([4, 9, 4, 9]);
    expect(corrections.dirty).toBe(false);
  });

  it("leave nothing unsaved once saved, without redrawing the page it leaves", () => {
    const { hidden, redrawn, corrections } = editing();
    corrections.delete(stored(2));
    corrections.add(drawn(1));
    corrections.saved();
    expect(hidden.size).toBe(0);
    expect(redrawn).toEqual([2]);
    expect([corrections.dirty, corrections.canUndo, corrections.canRedo]).toEqual([false, false, false]);
  });
});

describe("a cell drawn corner by corner", () => {
  it("needs three corners enclosing at least a pixel", () => {
    expect(
      makesACell([
        [0, 0],
        [4, 0],
      ]),
    ).toBe(false);
    expect(
      makesACell([
        [0, 0],
        [4, 0],
        [8, 0],
      ]),
    ).toBe(false); // on one line: no area
    expect(
      makesACell([
        [0, 0],
        [1, 0],
        [0, 1],
      ]),
    ).toBe(false); // half a pixel
    expect(
      makesACell([
        [0, 0],
        [2, 0],
        [0, 1],
      ]),
    ).toBe(true);
  });
});
