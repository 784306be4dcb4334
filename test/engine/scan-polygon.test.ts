// The one filling rule (common/geometry/roi-raster.ts ScanPolygon) against its definition: a pixel belongs
// to an outline when its centre lies inside by the even-odd rule, an edge counting for the rows
// whose centre y satisfies y0 <= y < y1. The scanline fill with an active edge table must give
// exactly the pixels of that test, whatever the vertices, rings and order of rows.
import { describe, expect, it } from "vitest";
import { ScanPolygon } from "../../common/geometry/roi-raster.ts";
import { combOutline } from "../fixtures/hostile-annotations.ts";

/** The even-odd test of one pixel centre against every edge: inside when an odd number of crossings lie at or left of it. */
function inside(rings: Float64Array[], cx: number, cy: number): boolean {
  let crossings = 0;
  for (const p of rings) {
    const n = p.length / 2;
    for (let i = 0; i < n; i++) {
      const j = (i + 1) % n;
      let [x0, y0, x1, y1] = [p[2 * i]!, p[2 * i + 1]!, p[2 * j]!, p[2 * j + 1]!];
      if (y0 === y1) continue;
      if (y0 > y1) [x0, y0, x1, y1] = [x1, y1, x0, y0];
      if (cy < y0 || cy >= y1) continue;
      if (x0 + ((cy - y0) * (x1 - x0)) / (y1 - y0) <= cx) crossings++;
    }
  }
  return crossings % 2 === 1;
}

function edgeRowCrossings(rings: Float64Array[], from: number, to: number): number {
  let total = 0;
  for (let y = from; y < to; y++) {
    for (const p of rings) {
      const n = p.length / 2;
      for (let i = 0; i < n; i++) {
        const [a, b] = [p[2 * i + 1]!, p[2 * ((i + 1) % n) + 1]!];
        if (a !== b && y + 0.5 >= Math.min(a, b) && y + 0.5 < Math.max(a, b)) total++;
      }
    }
  }
  return total;
}

function random(seed: number): () => number {
  let s = seed;
  return () => (s = (s * 1103515245 + 12345) >>> 0) / 2 ** 32;
}

describe("ScanPolygon", () => {
  it("fills exactly the pixels whose centres lie inside, for integer, half-integer and fractional outlines, rows in any order", () => {
    const next = random(24);
    for (let t = 0; t < 400; t++) {
      const [width, height] = [1 + Math.floor(next() * 30), 1 + Math.floor(next() * 30)];
      const rings = Array.from({ length: 1 + Math.floor(next() * 3) }, () => {
        const n = 3 + Math.floor(next() * (t % 5 === 0 ? 120 : 10));
        return Float64Array.from({ length: 2 * n }, (_, i) => {
          const v = ((i % 2 === 0 ? width : height) * (4 * next() - 1)) / 2;
          return t % 3 === 0 ? Math.round(v) : t % 3 === 1 ? Math.round(2 * v) / 2 : v;
        });
      });
      const shape = new ScanPolygon(rings);
      const rows = Array.from({ length: height }, (_, y) => y);
      if (t % 2 === 1) rows.sort(() => next() - 0.5);
      for (const y of rows) {
        const row = new Uint32Array(width);
        shape.fillRow(y, row, width, 7);
        const expected = Uint32Array.from({ length: width }, (_, x) => (inside(rings, x + 0.5, y + 0.5) ? 7 : 0));
        expect(row, `case ${t}, row ${y}`).toEqual(expected);
      }
      expect(shape.crossingsIn(0, height)).toBe(edgeRowCrossings(rings, 0, height));
    }
  });

  it("fills a comb whose rows cross thousands of edges, met right to left, as the test of every edge does", () => {
    const [width, height] = [256, 4];
    const rings = [combOutline(8_000, width, height)];
    const shape = new ScanPolygon(rings);
    expect(shape.crossingsIn(0, height)).toBe(4 * 4_000);
    for (let y = 0; y < height; y++) {
      const row = new Uint32Array(width);
      shape.fillRow(y, row, width, 1);
      expect(row).toEqual(Uint32Array.from({ length: width }, (_, x) => (inside(rings, x + 0.5, y + 0.5) ? 1 : 0)));
    }
  });
});
