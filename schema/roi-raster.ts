// Shared by the label-mask exports (worker), the runner's training labels and the annotation
// import (worker/annotations), which fills imported outlines with the same ScanPolygon, so an
// exported outline imports as the very pixels it was traced from.
// Renders the ROI polygons into a label image one row at a time: row y holds index + 1 for every
// pixel whose centre (x + 0.5, y + 0.5) lies inside ROI `index` (even-odd rule), 0 elsewhere;
// where ROIs overlap, the later one wins.
// For the pixel-edge outlines the engine produces this gives back the mask exactly, and so for an
// imported object's keyhole outline, holes included (schema/roi-measure.ts).
//
// Only ROIs whose bounding box covers the current row are kept ("active"): ROIs arrive in raster
// order, so bbox_y never decreases and a ROI joins when the scan reaches its top and leaves below
// its bottom. Memory is one row plus the active ROIs' edges.

import type { Roi } from "./roi.ts";

/**
 * One object's outline (one or more closed rings, holes included) prepared for scanline filling.
 * Vertices may be fractional (imported annotations); the engine's are integer pixel corners. The
 * one filling rule of the project.
 *
 * The classic scan conversion with an edge table and an active edge table (Foley, van Dam, Feiner
 * and Hughes, "Computer Graphics: Principles and Practice", 2nd ed., section 3.6; Newman and
 * Sproull 1979): the non-horizontal edges sorted by the first row whose pixel centre they cross,
 * and, while rows are filled in order, the list of edges that cross the current row: an edge joins
 * it at its first row and leaves after its last. Filling rows first..end costs the edges once, one
 * crossing per edge per row it crosses (sorted per row: insertion sort for a handful, a numeric
 * sort for many), and the pixels written; never every edge on every row, which made an outline of
 * 100,000 edges cost 100,000 operations on each of its rows and a sort quadratic in its crossings.
 * Each crossing is computed from the edge's end points, never stepped from the row before, so the
 * crossings (and the pixels) are exactly those of a test of every edge against every row.
 */
export class ScanPolygon {
  // Edges with y0 < y1, in order of their first row.
  private readonly x0: Float64Array;
  private readonly y0: Float64Array;
  private readonly x1: Float64Array;
  private readonly y1: Float64Array;
  /** First row whose centre (row + 0.5) lies in [y0, y1), and the first row after the last. */
  private readonly first: Int32Array;
  private readonly end: Int32Array;
  readonly edgeCount: number;
  /** Rows whose centre some edge crosses: [firstRow, endRow). */
  readonly firstRow: number;
  readonly endRow: number;
  // The active edge table: edges crossing row `row`; edges before `next` have joined it.
  private readonly active: Int32Array;
  private activeCount = 0;
  private next = 0;
  private row = Number.NEGATIVE_INFINITY;

  constructor(rings: readonly ArrayLike<number>[]) {
    let vertices = 0;
    for (const ring of rings) vertices += ring.length / 2;
    const ax = new Float64Array(vertices),
      ay = new Float64Array(vertices),
      bx = new Float64Array(vertices),
      by = new Float64Array(vertices);
    const first = new Int32Array(vertices),
      end = new Int32Array(vertices);
    let count = 0;
    let firstRow = Number.POSITIVE_INFINITY,
      endRow = Number.NEGATIVE_INFINITY;
    for (const p of rings) {
      const n = p.length / 2;
      for (let i = 0; i < n; i++) {
        const j = (i + 1) % n;
        let x0 = p[2 * i],
          y0 = p[2 * i + 1],
          x1 = p[2 * j],
          y1 = p[2 * j + 1];
        if (y0 === y1) continue;
        if (y0 > y1) [x0, y0, x1, y1] = [x1, y1, x0, y0];
        const from = firstCentreAtOrBelow(y0),
          to = firstCentreAtOrBelow(y1);
        if (from >= to) continue; // between two row centres: crosses none
        ax[count] = x0;
        ay[count] = y0;
        bx[count] = x1;
        by[count] = y1;
        first[count] = from;
        end[count] = to;
        if (from < firstRow) firstRow = from;
        if (to > endRow) endRow = to;
        count++;
      }
    }
    const order = byFirstRow(first, count, firstRow, endRow);
    this.x0 = new Float64Array(count);
    this.y0 = new Float64Array(count);
    this.x1 = new Float64Array(count);
    this.y1 = new Float64Array(count);
    this.first = new Int32Array(count);
    this.end = new Int32Array(count);
    for (let k = 0; k < count; k++) {
      const e = order[k]!;
      this.x0[k] = ax[e]!;
      this.y0[k] = ay[e]!;
      this.x1[k] = bx[e]!;
      this.y1[k] = by[e]!;
      this.first[k] = first[e]!;
      this.end[k] = end[e]!;
    }
    this.edgeCount = count;
    this.firstRow = count > 0 ? firstRow : 0;
    this.endRow = count > 0 ? endRow : 0;
    this.active = new Int32Array(count);
  }

  /** Edge crossings computed when rows [from, to) are filled: for each edge, the rows of its span among them. */
  crossingsIn(from: number, to: number): number {
    let total = 0;
    for (let e = 0; e < this.edgeCount; e++) total += Math.max(0, Math.min(to, this.end[e]!) - Math.max(from, this.first[e]!));
    return total;
  }

  /**
   * Writes `label` into row y's pixels (row[0 .. width)) whose centre lies inside. Rows are
   * cheapest filled in increasing order (the active edge table moves on); an earlier row than the
   * last one filled starts the table again.
   */
  fillRow(y: number, row: Uint32Array, width: number, label: number): void {
    this.advanceTo(y);
    const count = this.activeCount;
    if (count === 0) return;
    if (count > crossings.length) crossings = new Float64Array(Math.max(count, 2 * crossings.length));
    const centre = y + 0.5;
    const { active, x0, y0, x1, y1 } = this;
    for (let k = 0; k < count; k++) {
      const e = active[k]!;
      crossings[k] = x0[e]! + ((centre - y0[e]!) * (x1[e]! - x0[e]!)) / (y1[e]! - y0[e]!);
    }
    const xs = crossings;
    if (count <= 32) {
      // Insertion sort: a row crosses a cell's outline a handful of times.
      for (let i = 1; i < count; i++) {
        const v = xs[i]!;
        let j = i - 1;
        while (j >= 0 && xs[j]! > v) {
          xs[j + 1] = xs[j]!;
          j--;
        }
        xs[j + 1] = v;
      }
    } else {
      xs.subarray(0, count).sort();
    }
    for (let k = 0; k + 1 < count; k += 2) {
      // Pixel i is inside when its centre i + 0.5 lies in [xs[k], xs[k+1]).
      const from = Math.max(0, Math.ceil(xs[k]! - 0.5));
      const to = Math.min(width, Math.ceil(xs[k + 1]! - 0.5));
      for (let x = from; x < to; x++) row[x] = label;
    }
  }

  /** Moves the active edge table to row y: edges that ended leave, edges whose first row has come join. */
  private advanceTo(y: number): void {
    if (y < this.row) {
      this.activeCount = 0;
      this.next = 0;
    }
    this.row = y;
    const { active, first, end } = this;
    let kept = 0;
    for (let k = 0; k < this.activeCount; k++) {
      const e = active[k]!;
      if (end[e]! > y) active[kept++] = e;
    }
    let next = this.next;
    while (next < this.edgeCount && first[next]! <= y) {
      if (end[next]! > y) active[kept++] = next;
      next++;
    }
    this.next = next;
    this.activeCount = kept;
  }
}

/** The smallest row whose pixel centre (row + 0.5) is at y or past it (y grows downwards), as the fill tests it. */
function firstCentreAtOrBelow(y: number): number {
  let row = Math.ceil(y - 0.5);
  // y - 0.5 may round; settle the row by the comparison the fill makes.
  while (row + 0.5 < y) row++;
  while (row - 0.5 >= y) row--;
  return row;
}

/**
 * Edge indices 0..count in order of their first row: a bucket per row (the edge table) when the
 * rows spanned are few beside the edges, a comparison sort otherwise.
 */
function byFirstRow(first: Int32Array, count: number, firstRow: number, endRow: number): Int32Array {
  const order = new Int32Array(count);
  for (let e = 0; e < count; e++) order[e] = e;
  if (count === 0) return order;
  const rows = endRow - firstRow;
  if (rows > 4 * count + 1024) return order.sort((a, b) => first[a]! - first[b]!);
  const starts = new Int32Array(rows + 1);
  for (let e = 0; e < count; e++) starts[first[e]! - firstRow + 1]!++;
  for (let r = 1; r <= rows; r++) starts[r]! += starts[r - 1]!;
  for (let e = 0; e < count; e++) order[starts[first[e]! - firstRow]!++] = e;
  return order;
}

/** Scratch for one row's edge crossings, shared by every fill (fills are synchronous). */
let crossings = new Float64Array(64);

interface ActiveRoi {
  label: number;
  /** First row below the ROI. */
  end: number;
  shape: ScanPolygon;
}

function activate(roi: Roi): ActiveRoi {
  return { label: roi.index + 1, end: roi.bbox_y + roi.bbox_h, shape: new ScanPolygon([roi.polygon]) };
}

export class LabelRowRenderer {
  readonly width: number;
  readonly height: number;
  private readonly rois: AsyncIterator<Roi>;
  private pending: Roi | null = null;
  private exhausted = false;
  private active: ActiveRoi[] = [];
  private y = 0;

  constructor(width: number, height: number, rois: AsyncIterator<Roi>) {
    this.width = width;
    this.height = height;
    this.rois = rois;
  }

  /** Fills `row` (length >= width) with the labels of the next row; false once all rows are done. */
  async next(row: Uint32Array): Promise<boolean> {
    const y = this.y;
    if (y >= this.height) return false;
    row.fill(0, 0, this.width);
    await this.admitRoisStartingBy(y);
    this.active = this.active.filter((a) => a.end > y);
    for (const a of this.active) a.shape.fillRow(y, row, this.width, a.label);
    this.y++;
    return true;
  }

  /** Stops reading ROIs (when the consumer gives up early). */
  async close(): Promise<void> {
    if (!this.exhausted) {
      this.exhausted = true;
      await this.rois.return?.();
    }
  }

  private async admitRoisStartingBy(y: number): Promise<void> {
    for (;;) {
      if (this.pending === null) {
        if (this.exhausted) return;
        const { value, done } = await this.rois.next();
        if (done) {
          this.exhausted = true;
          return;
        }
        this.pending = value;
      }
      if (this.pending.bbox_y > y) return;
      this.active.push(activate(this.pending));
      this.pending = null;
    }
  }
}

/** The whole label image at once, for consumers that need it in memory (training labels). */
export async function renderLabels(width: number, height: number, rois: AsyncIterator<Roi>): Promise<Uint32Array> {
  const labels = new Uint32Array(width * height);
  const renderer = new LabelRowRenderer(width, height, rois);
  for (let y = 0; y < height; y++) {
    if (!(await renderer.next(labels.subarray(y * width, (y + 1) * width)))) break;
  }
  return labels;
}
