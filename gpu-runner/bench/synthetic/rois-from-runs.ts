// Segmentations built from "row runs", for tests and benches: an ROI is a top row and, per row below it, the
// half-open pixel span [x0, x1) it covers. Consecutive spans overlap, so every ROI is one
// 4-connected piece without holes, and its pixel-edge outline, area, centroid and bounding box
// follow directly, independently of the code under test.

import type { Roi } from "../../../schema/roi.ts";
import { SeededRandom } from "../../training/random.ts";

export type Run = readonly [x0: number, x1: number];

export interface RunShape {
  top: number;
  runs: readonly Run[];
}

/** The outline: down the right ends of the runs, then up the left ends; collinear vertices dropped. */
export function outlineOfRuns({ top, runs }: RunShape): Int32Array {
  const raw: number[] = [];
  runs.forEach(([, x1], r) => raw.push(x1, top + r, x1, top + r + 1));
  for (let r = runs.length - 1; r >= 0; r--) raw.push(runs[r][0], top + r + 1, runs[r][0], top + r);
  const pts: [number, number][] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const last = pts[pts.length - 1];
    if (!last || last[0] !== raw[i] || last[1] !== raw[i + 1]) pts.push([raw[i], raw[i + 1]]);
  }
  if (pts.length > 1 && pts[0][0] === pts[pts.length - 1][0] && pts[0][1] === pts[pts.length - 1][1]) pts.pop();
  // Drop vertices in the middle of a straight edge until none is left.
  let changed = true;
  while (changed) {
    changed = false;
    for (let i = 0; i < pts.length; i++) {
      const a = pts[(i + pts.length - 1) % pts.length],
        b = pts[i],
        c = pts[(i + 1) % pts.length];
      if ((a[0] === b[0] && b[0] === c[0]) || (a[1] === b[1] && b[1] === c[1])) {
        pts.splice(i, 1);
        changed = true;
        break;
      }
    }
  }
  return Int32Array.from(pts.flat());
}

export function roiFromRuns(index: number, shape: RunShape): Roi {
  const { top, runs } = shape;
  let area = 0,
    sumX = 0,
    sumY = 0,
    minX = Infinity,
    maxX = -Infinity;
  runs.forEach(([x0, x1], r) => {
    for (let x = x0; x < x1; x++) {
      area++;
      sumX += x + 0.5;
      sumY += top + r + 0.5;
    }
    minX = Math.min(minX, x0);
    maxX = Math.max(maxX, x1);
  });
  const polygon = outlineOfRuns(shape);
  let perimeter = 0;
  for (let i = 0; i < polygon.length; i += 2) {
    const j = (i + 2) % polygon.length;
    perimeter += Math.abs(polygon[j] - polygon[i]) + Math.abs(polygon[j + 1] - polygon[i + 1]);
  }
  return {
    index,
    area_px: area,
    perimeter_px: perimeter,
    centroid_x: sumX / area,
    centroid_y: sumY / area,
    bbox_x: minX,
    bbox_y: top,
    bbox_w: maxX - minX,
    bbox_h: runs.length,
    polygon,
  };
}

/** Orders shapes the way the engine orders ROIs: by their first pixel in raster order. */
export function inRasterOrder(shapes: readonly RunShape[]): RunShape[] {
  return [...shapes].sort((a, b) => a.top - b.top || a.runs[0][0] - b.runs[0][0]);
}

/** The ROIs of shapes already in raster order. */
export function roisFromShapes(ordered: readonly RunShape[]): Roi[] {
  return ordered.map((s, i) => roiFromRuns(i, s));
}

/** The reference label image of shapes in raster order: every pixel of shape i gets i + 1. */
export function labelsFromShapes(width: number, height: number, ordered: readonly RunShape[]): Uint32Array {
  const labels = new Uint32Array(width * height);
  ordered.forEach((s, i) => s.runs.forEach(([x0, x1], r) => labels.fill(i + 1, (s.top + r) * width + x0, (s.top + r) * width + x1)));
  return labels;
}

/** A deterministic uniform [0, 1) generator (the trainer's mulberry32), so synthetic segmentations repeat exactly. */
export function seededRandom(seed: number): () => number {
  const random = new SeededRandom(seed);
  return () => random.next();
}

/**
 * `columns` x `rows` tiles of `tile` pixels, one random blob per tile (about 3.3 vertices per row
 * of height, at least `minHeight` rows tall), never touching a neighbour.
 */
export function syntheticShapes(columns: number, rows: number, tile: number, seed: number, minHeight = 3): RunShape[] {
  const random = seededRandom(seed);
  const shapes: RunShape[] = [];
  for (let ty = 0; ty < rows; ty++) {
    for (let tx = 0; tx < columns; tx++) {
      const height = minHeight + Math.floor(random() * (tile - 2 - minHeight));
      const top = ty * tile + 1 + Math.floor(random() * (tile - 2 - height));
      const left = tx * tile + 1;
      const span = tile - 2;
      const runs: Run[] = [];
      let x0 = left + Math.floor(random() * (span / 2));
      let x1 = x0 + 2 + Math.floor(random() * (left + span - x0 - 2));
      for (let r = 0; r < height; r++) {
        runs.push([x0, x1]);
        // The next span must overlap this one and stay inside the tile.
        const nx0 = Math.min(x1 - 1, Math.max(left, x0 + Math.floor(random() * 5) - 2));
        const nx1 = Math.max(nx0 + 1, x0 + 1, Math.min(left + span, x1 + Math.floor(random() * 5) - 2));
        x0 = nx0;
        x1 = nx1;
      }
      shapes.push({ top, runs });
    }
  }
  return shapes;
}
