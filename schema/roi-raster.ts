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
 * One object's outline (one or more closed rings, holes included) prepared for scanline filling:
 * its non-horizontal edges as (x0, y0, x1, y1) with y0 < y1. Vertices may be fractional (imported
 * annotations); the engine's are integer pixel corners. The one filling rule of the project.
 */
export class ScanPolygon {
  private readonly edges: Float64Array;
  private readonly edgeCount: number;

  constructor(rings: readonly ArrayLike<number>[]) {
    let vertices = 0;
    for (const ring of rings) vertices += ring.length / 2;
    const edges = new Float64Array(4 * vertices);
    let edgeCount = 0;
    for (const p of rings) {
      const n = p.length / 2;
      for (let i = 0; i < n; i++) {
        const j = (i + 1) % n;
        const ax = p[2 * i],
          ay = p[2 * i + 1],
          bx = p[2 * j],
          by = p[2 * j + 1];
        if (ay === by) continue;
        const e = 4 * edgeCount++;
        if (ay < by) {
          edges[e] = ax;
          edges[e + 1] = ay;
          edges[e + 2] = bx;
          edges[e + 3] = by;
        } else {
          edges[e] = bx;
          edges[e + 1] = by;
          edges[e + 2] = ax;
          edges[e + 3] = ay;
        }
      }
    }
    this.edges = edges;
    this.edgeCount = edgeCount;
  }

  /** Writes `label` into row y's pixels (row[0 .. width)) whose centre lies inside. */
  fillRow(y: number, row: Uint32Array, width: number, label: number): void {
    const centre = y + 0.5;
    const edges = this.edges;
    let count = 0;
    for (let e = 0; e < 4 * this.edgeCount; e += 4) {
      const y0 = edges[e + 1],
        y1 = edges[e + 3];
      if (centre < y0 || centre >= y1) continue;
      const x0 = edges[e],
        x1 = edges[e + 2];
      if (count === crossings.length) {
        const grown = new Float64Array(count * 2);
        grown.set(crossings);
        crossings = grown;
      }
      crossings[count++] = x0 + ((centre - y0) * (x1 - x0)) / (y1 - y0);
    }
    const xs = crossings;
    // Insertion sort: a row crosses a cell's outline a handful of times.
    for (let i = 1; i < count; i++) {
      const v = xs[i];
      let j = i - 1;
      while (j >= 0 && xs[j] > v) {
        xs[j + 1] = xs[j];
        j--;
      }
      xs[j + 1] = v;
    }
    for (let k = 0; k + 1 < count; k += 2) {
      // Pixel i is inside when its centre i + 0.5 lies in [xs[k], xs[k+1]).
      const from = Math.max(0, Math.ceil(xs[k] - 0.5));
      const to = Math.min(width, Math.ceil(xs[k + 1] - 0.5));
      for (let x = from; x < to; x++) row[x] = label;
    }
  }
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
