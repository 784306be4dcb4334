// Shared by the label-mask exports (worker), the runner's training labels and the annotation
// import (worker/annotations), which fills imported outlines with the same ScanPolygon, so an
// exported outline imports as the very pixels it was traced from.
// Renders the ROI polygons into a label image one row at a time: row y holds index + 1 for every
// pixel whose centre (x + 0.5, y + 0.5) lies inside ROI `index` (even-odd rule), 0 elsewhere;
// where ROIs overlap, the later one wins.
// For the pixel-edge outlines the engine produces this gives back the mask exactly, and so for an
// imported object's keyhole outline, holes included (common/geometry/roi-measure.ts).
//
// Only ROIs whose bounding box covers the current row are kept ("active"): ROIs arrive in raster
// order, so bbox_y never decreases and a ROI joins when the scan reaches its top and leaves below
// its bottom. Memory is one row plus the active ROIs' edges.
//
// Numeric hot loops: every index is bounded by a loop over the array's own length (or width ×
// height, or a row's samples). The `!`s state that bound to noUncheckedIndexedAccess rather
// than check it again in the inner loop.

import type { Roi } from "../../schema/roi.ts";

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
 * An outline of a few dozen edges (a cell's) skips the tables and tests its edges on each row:
 * for so few that is cheaper than keeping them. Each crossing is computed from the edge's end
 * points, never stepped from the row before, so the crossings (and the pixels) are exactly those
 * of a test of every edge against every row.
 */
export class ScanPolygon {
  /** Edges with y0 < y1 as (x0, y0, x1, y1), in order of their first row when the active table is kept. */
  private readonly edges: Float64Array;
  /**
   * Per edge its first row (whose centre, row + 0.5, lies in [y0, y1)) at 2e and the row after its
   * last at 2e + 1; after those, the active edge table (edges crossing the row last filled).
   */
  private readonly rows: Int32Array;
  readonly edgeCount: number;
  /** Rows whose centre some edge crosses: [firstRow, endRow). */
  readonly firstRow: number;
  readonly endRow: number;
  private readonly tables: boolean;
  private activeCount = 0;
  /** Edges before `next` have joined the active table. */
  private next = 0;
  private row = Number.NEGATIVE_INFINITY;

  constructor(rings: readonly ArrayLike<number>[]) {
    let vertices = 0;
    for (const ring of rings) vertices += ring.length / 2;
    if (4 * vertices > scratchEdges.length) scratchEdges = new Float64Array(4 * vertices);
    if (2 * vertices > scratchRows.length) scratchRows = new Int32Array(2 * vertices);
    const edges = scratchEdges,
      rows = scratchRows;
    let count = 0;
    let firstRow = Number.POSITIVE_INFINITY,
      endRow = Number.NEGATIVE_INFINITY;
    for (const p of rings) {
      const n = p.length / 2;
      for (let i = 0; i < n; i++) {
        const j = i + 1 === n ? 0 : i + 1;
        let x0 = p[2 * i]!,
          y0 = p[2 * i + 1]!,
          x1 = p[2 * j]!,
          y1 = p[2 * j + 1]!;
        if (y0 === y1) continue;
        if (y0 > y1) {
          const x = x0,
            y = y0;
          x0 = x1;
          y0 = y1;
          x1 = x;
          y1 = y;
        }
        const from = firstCentreFrom(y0),
          to = firstCentreFrom(y1);
        if (from >= to) continue; // between two row centres: crosses none
        edges[4 * count] = x0;
        edges[4 * count + 1] = y0;
        edges[4 * count + 2] = x1;
        edges[4 * count + 3] = y1;
        rows[2 * count] = from;
        rows[2 * count + 1] = to;
        if (from < firstRow) firstRow = from;
        if (to > endRow) endRow = to;
        count++;
      }
    }
    this.edgeCount = count;
    this.firstRow = count > 0 ? firstRow : 0;
    this.endRow = count > 0 ? endRow : 0;
    this.tables = count > SCAN_ALL_EDGES;
    this.edges = new Float64Array(4 * count);
    this.rows = new Int32Array((this.tables ? 3 : 2) * count);
    if (!this.tables) {
      this.edges.set(edges.subarray(0, 4 * count));
      this.rows.set(rows.subarray(0, 2 * count));
      return;
    }
    const order = byFirstRow(rows, count, firstRow, endRow);
    for (let k = 0; k < count; k++) {
      const e = order[k]!;
      this.edges.set(edges.subarray(4 * e, 4 * e + 4), 4 * k);
      this.rows[2 * k] = rows[2 * e]!;
      this.rows[2 * k + 1] = rows[2 * e + 1]!;
    }
  }

  /** Edge crossings computed when rows [from, to) are filled: for each edge, the rows of its span among them. */
  crossingsIn(from: number, to: number): number {
    let total = 0;
    for (let e = 0; e < this.edgeCount; e++) total += Math.max(0, Math.min(to, this.rows[2 * e + 1]!) - Math.max(from, this.rows[2 * e]!));
    return total;
  }

  /**
   * Writes `label` into row y's pixels (row[0 .. width)) whose centre lies inside. Rows are
   * cheapest filled in increasing order (the active edge table moves on); an earlier row than the
   * last one filled starts the table again.
   */
  fillRow(y: number, row: Uint32Array, width: number, label: number): void {
    const centre = y + 0.5;
    const { edges, rows } = this;
    let count = 0;
    if (this.tables) {
      this.advanceTo(y);
      count = this.activeCount;
      if (count > crossings.length) crossings = new Float64Array(Math.max(count, 2 * crossings.length));
      const active = 2 * this.edgeCount;
      for (let k = 0; k < count; k++) {
        const e = 4 * rows[active + k]!;
        crossings[k] = edges[e]! + ((centre - edges[e + 1]!) * (edges[e + 2]! - edges[e]!)) / (edges[e + 3]! - edges[e + 1]!);
      }
    } else {
      if (this.edgeCount > crossings.length) crossings = new Float64Array(Math.max(this.edgeCount, 2 * crossings.length));
      for (let e = 0; e < this.edgeCount; e++) {
        if (y < rows[2 * e]! || y >= rows[2 * e + 1]!) continue;
        const at = 4 * e;
        crossings[count++] = edges[at]! + ((centre - edges[at + 1]!) * (edges[at + 2]! - edges[at]!)) / (edges[at + 3]! - edges[at + 1]!);
      }
    }
    if (count === 0) return;
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
    const rows = this.rows;
    const active = 2 * this.edgeCount;
    let kept = 0;
    for (let k = 0; k < this.activeCount; k++) {
      const e = rows[active + k]!;
      if (rows[2 * e + 1]! > y) rows[active + kept++] = e;
    }
    let next = this.next;
    while (next < this.edgeCount && rows[2 * next]! <= y) {
      if (rows[2 * next + 1]! > y) rows[active + kept++] = next;
      next++;
    }
    this.next = next;
    this.activeCount = kept;
  }
}

/** Outlines of at most this many edges test every edge on each row; larger ones keep the edge tables. */
const SCAN_ALL_EDGES = 64;

/** Scratch for an outline's edges while they are gathered (outlines are prepared one at a time, synchronously). */
let scratchEdges = new Float64Array(256);
let scratchRows = new Int32Array(128);

/** The smallest row whose pixel centre (row + 0.5) is at y or past it (y grows downwards), as the fill tests it. */
function firstCentreFrom(y: number): number {
  let row = Math.ceil(y - 0.5);
  // y - 0.5 may round; settle the row by the comparison the fill makes.
  while (row + 0.5 < y) row++;
  while (row - 0.5 >= y) row--;
  return row;
}

/**
 * Edge indices 0..count in order of their first row (rows[2e]): a bucket per row (the edge table)
 * when the rows spanned are few beside the edges, a comparison sort otherwise.
 */
function byFirstRow(rows: Int32Array, count: number, firstRow: number, endRow: number): Int32Array {
  const order = new Int32Array(count);
  const span = endRow - firstRow;
  if (span > 4 * count + 1024) {
    for (let e = 0; e < count; e++) order[e] = e;
    return order.sort((a, b) => rows[2 * a]! - rows[2 * b]!);
  }
  const starts = new Int32Array(span + 1);
  for (let e = 0; e < count; e++) starts[rows[2 * e]! - firstRow + 1]!++;
  for (let r = 1; r <= span; r++) starts[r]! += starts[r - 1]!;
  for (let e = 0; e < count; e++) order[starts[rows[2 * e]! - firstRow]!++] = e;
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
