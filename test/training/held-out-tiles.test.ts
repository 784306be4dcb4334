// A held-out image scored tile by tile: each object's outcome (found, missed, spurious) counted in
// the tile holding its centroid, from one matching over the whole image, so the tiles add up to
// the image's own AP@0.5.
import { describe, expect, it } from "vitest";
import { averagePrecision } from "../../common/scoring/average-precision.ts";
import { heldOutTiles } from "../../gpu-runner/training/held-out-tiles.ts";
import { syntheticNuclei } from "./synthetic-nuclei.ts";

/** A label image of `width`² with square objects: [id, x, y, side]. */
function squares(width: number, objects: [number, number, number, number][]): Uint32Array {
  const labels = new Uint32Array(width * width);
  for (const [id, x0, y0, side] of objects) for (let y = y0; y < y0 + side; y++) for (let x = x0; x < x0 + side; x++) labels[y * width + x] = id;
  return labels;
}

describe("heldOutTiles", () => {
  it("counts a found object, a missed one and a spurious one in the tiles holding their centroids", () => {
    // 40² in tiles of 20: object 1 (top left) found, object 2 (bottom right) missed, a spurious one top right.
    const truth = squares(40, [
      [1, 2, 2, 6],
      [2, 30, 30, 6],
    ]);
    const predicted = squares(40, [
      [7, 2, 2, 6],
      [9, 30, 4, 6],
    ]);
    const tiles = heldOutTiles(truth, predicted, 40, 20);
    expect([...tiles.index]).toEqual([0, 1, 3]);
    expect([...tiles.truePositives]).toEqual([1, 0, 0]);
    expect([...tiles.falsePositives]).toEqual([0, 1, 0]);
    expect([...tiles.falseNegatives]).toEqual([0, 0, 1]);
    expect(tiles.objects).toBe(2);
  });

  it("adds up to the whole image's matching, so the image's AP@0.5 is the one validation reports", () => {
    const { labels: truth } = syntheticNuclei(96, 96, 8, 4);
    const { labels: shifted } = syntheticNuclei(96, 96, 8, 4);
    // A prediction that misses some objects and moves others: found, missed and spurious all occur.
    const predicted = new Uint32Array(truth.length);
    for (let i = 0; i < truth.length; i++) if (shifted[i]! % 3 !== 0 && i + 2 < truth.length) predicted[i + 2 + (shifted[i]! % 2) * 96 * 3] = shifted[i]!;
    const whole = averagePrecision(truth, predicted, [0.5]);
    const tiles = heldOutTiles(truth, predicted, 96, 32);
    const sum = (a: Int32Array) => a.reduce((s, v) => s + v, 0);
    expect(sum(tiles.truePositives)).toBe(whole.tp[0]);
    expect(sum(tiles.falsePositives)).toBe(whole.fp[0]);
    expect(sum(tiles.falseNegatives)).toBe(whole.fn[0]);
    expect(whole.tp[0]! * whole.fp[0]! * whole.fn[0]!).toBeGreaterThan(0);
    expect(tiles.index.length).toBeGreaterThan(1);
  });
});
