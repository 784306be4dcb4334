// Cells kept by blocks arrive block by block; the ROI artifact and its streaming readers need them
// in raster order of their first pixel (schema/roi.ts: bbox_y never decreases). Cells wait here
// until no later block can hold a cell that starts above them, then leave sorted, numbered.
import type { Roi } from "../../../schema/roi.ts";

interface Waiting {
  roi: Roi;
  /** Raster position of the cell's first pixel (top row, leftmost). */
  key: number;
}

export class RasterOrderQueue {
  private waiting: Waiting[] = [];
  private next = 0;
  private readonly imageWidth: number;

  constructor(imageWidth: number) {
    this.imageWidth = imageWidth;
  }

  /** A cell in image coordinates; its index is given when it leaves. */
  add(roi: Roi): void {
    this.waiting.push({ roi, key: roi.bbox_y * this.imageWidth + firstColumn(roi) });
  }

  /** Cells that start above row `y`, in raster order, numbered on from the last ones released. */
  releaseAbove(y: number): Roi[] {
    const leaving = this.waiting.filter((w) => w.roi.bbox_y < y).sort((a, b) => a.key - b.key);
    this.waiting = this.waiting.filter((w) => w.roi.bbox_y >= y);
    for (const w of leaving) w.roi.index = this.next++;
    return leaving.map((w) => w.roi);
  }

  releaseAll(): Roi[] {
    return this.releaseAbove(Number.POSITIVE_INFINITY);
  }

  get released(): number {
    return this.next;
  }
}

/** The leftmost pixel of the cell's top row: its leftmost outline corner on the top edge. */
function firstColumn(roi: Roi): number {
  let left = Number.POSITIVE_INFINITY;
  const p = roi.polygon;
  for (let i = 0; i < p.length; i += 2) if (p[i + 1] === roi.bbox_y && p[i]! < left) left = p[i]!;
  return left;
}
