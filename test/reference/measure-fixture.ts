// The label image that the measurement columns are checked on against scikit-image's regionprops
// (regionprops.py computes the reference values from exactly these labels; regenerate.ts writes
// them to regionprops.json). Objects of many kinds, none touching another: convex and not, thin
// lines one pixel wide, a staircase joined only at corners (8-connected), a single pixel, rotated
// ellipses, a ring with a hole, and seeded random blobs.

import { SeededRandom } from "../../gpu-runner/training/random.ts";

export const FIXTURE_WIDTH = 120;
export const FIXTURE_HEIGHT = 80;

export interface FixtureLabels {
  width: number;
  height: number;
  /** Row-major, 0 background, objects 1..count numbered in raster order of their first pixel. */
  labels: Uint32Array;
  count: number;
}

/** Every object, painted with a provisional label; later renumbered in raster order. */
function paint(): Uint32Array {
  const w = FIXTURE_WIDTH,
    h = FIXTURE_HEIGHT;
  const labels = new Uint32Array(w * h);
  let next = 1;
  const set = (x: number, y: number, k: number) => {
    if (x >= 0 && y >= 0 && x < w && y < h) labels[y * w + x] = k;
  };
  const ellipse = (cx: number, cy: number, a: number, b: number, degrees: number) => {
    const k = next++;
    const t = (degrees * Math.PI) / 180;
    for (let y = 0; y < h; y++)
      for (let x = 0; x < w; x++) {
        // Screen angle: counter-clockwise as seen, with y pointing down.
        const dx = x + 0.5 - cx,
          dy = y + 0.5 - cy;
        const u = dx * Math.cos(t) - dy * Math.sin(t),
          v = dx * Math.sin(t) + dy * Math.cos(t);
        if ((u / a) ** 2 + (v / b) ** 2 <= 1) set(x, y, k);
      }
  };
  ellipse(16, 12, 13, 5, 30);
  ellipse(45, 12, 10, 10, 0); // a disc: no orientation
  ellipse(72, 14, 12, 4, 135);
  ellipse(100, 12, 9, 6, 90);
  // A ring with a hole.
  {
    const k = next++;
    for (let y = 26; y < 46; y++)
      for (let x = 4; x < 24; x++) {
        const r = Math.hypot(x + 0.5 - 14, y + 0.5 - 36);
        if (r <= 9.5 && r > 4) set(x, y, k);
      }
  }
  // A "C", open to the right.
  {
    const k = next++;
    for (let y = 28; y < 44; y++) for (let x = 30; x < 44; x++) if (x < 34 || y < 32 || y >= 40) set(x, y, k);
  }
  // One pixel; a horizontal and a vertical line one pixel wide; a staircase joined only at corners.
  set(50, 28, next++);
  {
    const k = next++;
    for (let x = 50; x < 64; x++) set(x, 32, k);
  }
  {
    const k = next++;
    for (let y = 36; y < 50; y++) set(52, y, k);
  }
  {
    const k = next++;
    for (let i = 0; i < 10; i++) set(56 + i, 36 + i, k);
  }
  // A 2 x 2 square and an L.
  {
    const k = next++;
    for (const [x, y] of [
      [70, 28],
      [71, 28],
      [70, 29],
      [71, 29],
    ])
      set(x!, y!, k);
  }
  {
    const k = next++;
    for (let y = 28; y < 42; y++) set(76, y, k);
    for (let x = 76; x < 86; x++) set(x, 41, k);
  }
  // Seeded random blobs in a row of tiles along the bottom: a random walk of overlapping spans.
  const random = new SeededRandom(23);
  for (let tile = 0; tile < 8; tile++) {
    const k = next++;
    const left = 2 + tile * 14,
      top = 54 + random.below(6);
    let x0 = left + random.below(4),
      x1 = x0 + 3 + random.below(7);
    for (let y = top; y < top + 8 + random.below(10); y++) {
      for (let x = x0; x < x1; x++) set(x, y, k);
      // The next span overlaps this one, so the blob stays one piece.
      const nextX0 = Math.min(x1 - 1, Math.max(left, x0 + random.below(5) - 2));
      x1 = Math.max(nextX0 + 1, x0 + 1, Math.min(left + 12, x1 + random.below(5) - 2));
      x0 = nextX0;
    }
  }
  return labels;
}

export function fixtureLabels(): FixtureLabels {
  const painted = paint();
  const renumber = new Map<number, number>();
  const labels = new Uint32Array(painted.length);
  for (let i = 0; i < painted.length; i++) {
    const k = painted[i]!;
    if (k === 0) continue;
    if (!renumber.has(k)) renumber.set(k, renumber.size + 1);
    labels[i] = renumber.get(k)!;
  }
  return { width: FIXTURE_WIDTH, height: FIXTURE_HEIGHT, labels, count: renumber.size };
}
