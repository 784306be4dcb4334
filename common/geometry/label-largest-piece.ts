// Keeps each mask's largest 8-connected piece. Cellpose's masks may occasionally consist of
// separate pieces (pixels whose trajectories end in the same seed without touching); an ROI is one
// outline, so stray pieces are dropped to keep "polygon area = pixel count" true for every mask.
// (A deliberate addition to Cellpose's pipeline; it changes nothing on connected masks.)
// Works mask by mask inside its bounding box, so memory follows the largest mask, not the image.
// Pieces are found from the mask's runs along rows, joined (union-find) where runs of neighbouring
// rows overlap or touch diagonally: one read per box pixel, 3-4x faster than a pixel flood fill.
//
// Numeric hot loops: every index is bounded by a loop over the array's own length (or width ×
// height, or a row's samples). The `!`s state that bound to noUncheckedIndexedAccess rather
// than check it again in the inner loop.
import { labelBoxes } from "./label-image.ts";

/** Works in place on labels 1..count; returns the number of pixels removed. */
export function keepLargestComponents(labels: Uint32Array, count: number, width: number): number {
  const boxes = labelBoxes(labels, width, count);
  const runs = new PieceRuns();
  let removed = 0;
  for (let k = 1; k <= count; k++) {
    if (boxes.area[k] === 0) continue;
    const x0 = boxes.minX[k]!,
      y0 = boxes.minY[k]!;
    const w = boxes.maxX[k]! - x0 + 1,
      h = boxes.maxY[k]! - y0 + 1;
    const total = runs.collect(labels, width, k, x0, y0, w, h);
    removed += runs.dropAllButLargest(labels, width, x0, y0, total);
  }
  return removed;
}

/** One mask's runs (row, first and last column in its box) and the union-find joining them into pieces. */
class PieceRuns {
  row = new Int32Array(0);
  from = new Int32Array(0);
  to = new Int32Array(0);
  parent = new Int32Array(0);
  size = new Float64Array(0);

  /** Finds mask k's runs in its box, joins touching ones, and returns how many runs there are. */
  collect(labels: Uint32Array, width: number, k: number, x0: number, y0: number, w: number, h: number): number {
    // A row of w pixels holds at most ceil(w / 2) runs.
    this.ensure(h * ((w + 1) >> 1));
    const { row, from, to, parent, size } = this;
    let total = 0,
      previousFirst = 0,
      previousEnd = 0;
    for (let y = 0; y < h; y++) {
      const first = total;
      const base = (y0 + y) * width + x0;
      for (let x = 0; x < w; x++) {
        if (labels[base + x] !== k) continue;
        const start = x;
        while (x + 1 < w && labels[base + x + 1] === k) x++;
        row[total] = y;
        from[total] = start;
        to[total] = x;
        parent[total] = total;
        size[total] = x - start + 1;
        total++;
      }
      // Runs of the row above and this row (both sorted) touch, 8-connected, when their column
      // ranges overlap once widened by one: walk both lists together.
      let a = previousFirst;
      for (let b = first; b < total; b++) {
        while (a < previousEnd && to[a]! + 1 < from[b]!) a++;
        for (let c = a; c < previousEnd && from[c]! <= to[b]! + 1; c++) this.join(c, b);
      }
      previousFirst = first;
      previousEnd = total;
    }
    return total;
  }

  /**
   * Zeroes the runs of every piece but the largest, the first of equal largest ones in raster order
   * of their first pixel (as a flood fill from each unvisited pixel in raster order would number
   * them); returns the pixels zeroed. A piece's root is its first run (join keeps the earlier run),
   * so roots in run order are the pieces in that order.
   */
  dropAllButLargest(labels: Uint32Array, width: number, x0: number, y0: number, total: number): number {
    const { row, from, to, size } = this;
    let largest = -1,
      pieces = 0;
    for (let r = 0; r < total; r++) {
      if (this.find(r) !== r) continue;
      pieces++;
      if (largest === -1 || size[r]! > size[largest]!) largest = r;
    }
    if (pieces === 1) return 0;
    let removed = 0;
    for (let r = 0; r < total; r++) {
      if (this.find(r) === largest) continue;
      const base = (y0 + row[r]!) * width + x0;
      for (let x = from[r]!; x <= to[r]!; x++) labels[base + x] = 0;
      removed += to[r]! - from[r]! + 1;
    }
    return removed;
  }

  private join(a: number, b: number): void {
    const ra = this.find(a),
      rb = this.find(b);
    if (ra === rb) return;
    // The earlier run stays the root, so each piece's root is its first run.
    const [root, child] = ra < rb ? [ra, rb] : [rb, ra];
    this.parent[child] = root;
    this.size[root]! += this.size[child]!;
  }

  private find(r: number): number {
    const { parent } = this;
    while (parent[r] !== r) {
      parent[r] = parent[parent[r]!]!;
      r = parent[r]!;
    }
    return r;
  }

  private ensure(runs: number): void {
    if (this.row.length >= runs) return;
    this.row = new Int32Array(runs);
    this.from = new Int32Array(runs);
    this.to = new Int32Array(runs);
    this.parent = new Int32Array(runs);
    this.size = new Float64Array(runs);
  }
}
