import { describe, expect, it } from "vitest";
import { renumberInRasterOrder } from "../../common/geometry/label-image.ts";
import { fillHolesAndRemoveSmall } from "../../gpu-runner/engine/masks/holes-and-sizes.ts";
import { keepLargestComponents } from "../../common/geometry/label-largest-piece.ts";
import { confluency, measureRois, tracedPerimeter } from "../../common/geometry/roi-measure.ts";
import type { Roi } from "../../schema/roi.ts";
import { discField, emptyLabels, mixedScene, paintRect, type LabelImage } from "../fixtures/labels.ts";

/** Pixels whose centres lie inside the polygon (even-odd rule), as a 0/1 image. */
function rasterise(polygon: Int32Array, width: number, height: number): Uint8Array {
  const out = new Uint8Array(width * height);
  const n = polygon.length / 2;
  for (let y = 0; y < height; y++) {
    const cy = y + 0.5;
    const crossings: number[] = [];
    for (let i = 0; i < n; i++) {
      const x1 = polygon[2 * i]!,
        y1 = polygon[2 * i + 1]!;
      const x2 = polygon[2 * ((i + 1) % n)]!,
        y2 = polygon[2 * ((i + 1) % n) + 1]!;
      if (y1 <= cy !== y2 <= cy) crossings.push(x1 + ((cy - y1) / (y2 - y1)) * (x2 - x1));
    }
    crossings.sort((a, b) => a - b);
    for (let c = 0; c + 1 < crossings.length; c += 2) {
      for (let x = Math.ceil(crossings[c]! - 0.5); x < crossings[c + 1]! - 0.5; x++) out[y * width + x] = 1;
    }
  }
  return out;
}

function shoelaceArea(polygon: Int32Array): number {
  let twice = 0;
  const n = polygon.length / 2;
  for (let i = 0; i < n; i++) {
    const j = (i + 1) % n;
    twice += polygon[2 * i]! * polygon[2 * j + 1]! - polygon[2 * j]! * polygon[2 * i + 1]!;
  }
  return Math.abs(twice) / 2;
}

function roisOf(scene: LabelImage): { labels: Uint32Array; rois: Roi[] } {
  const labels = scene.labels.slice();
  const count = renumberInRasterOrder(labels);
  return { labels, rois: measureRois(labels, scene.width, scene.height, count) };
}

/**
 * A blobby scene with diagonal-only contacts and ragged edges, from a fixed random walk, cleaned
 * up as the engine cleans its masks (holes filled, one piece per mask).
 */
function raggedScene(): LabelImage {
  const scene = emptyLabels(64, 48);
  let state = 99;
  const random = () => (state = (state * 1_103_515_245 + 12_345) >>> 0) / 2 ** 32;
  for (let k = 1; k <= 12; k++) {
    let x = Math.floor(random() * 64),
      y = Math.floor(random() * 48);
    for (let s = 0; s < 60; s++) {
      scene.labels[y * 64 + x] = k;
      x = Math.min(63, Math.max(0, x + Math.floor(random() * 3) - 1));
      y = Math.min(47, Math.max(0, y + Math.floor(random() * 3) - 1));
    }
  }
  fillHolesAndRemoveSmall(scene.labels, renumberInRasterOrder(scene.labels), 64, 0);
  keepLargestComponents(scene.labels, renumberInRasterOrder(scene.labels), 64);
  return scene;
}

describe("ROI outlines", () => {
  it("outlines a single pixel by its four corners", () => {
    const scene = emptyLabels(5, 5);
    scene.labels[2 * 5 + 3] = 1;
    const [roi] = roisOf(scene).rois;
    expect(Array.from(roi!.polygon)).toEqual([3, 2, 4, 2, 4, 3, 3, 3]);
    expect(roi!.perimeter_px).toBeCloseTo(4 - 2 * (2 - Math.SQRT2), 12); // ImageJ's documented example
  });

  for (const [name, scene] of [
    ["touching, concave and tiny objects", mixedScene()],
    ["ragged 8-connected blobs", raggedScene()],
    ["a disc field", discField(128, 96, 25, 3, 12, 5)],
  ] as const) {
    it(`rasterise back to exactly their masks, with shoelace area = pixel count: ${name}`, () => {
      const { labels, rois } = roisOf(scene);
      for (const roi of rois) {
        const filled = rasterise(roi.polygon, scene.width, scene.height);
        let differences = 0;
        for (let i = 0; i < labels.length; i++) if (filled[i] !== (labels[i] === roi.index + 1 ? 1 : 0)) differences++;
        expect(shoelaceArea(roi.polygon)).toBe(roi.area_px);
        expect(differences).toBe(0);
      }
    });
  }

  it("has no repeated first vertex and no collinear vertices", () => {
    for (const roi of roisOf(mixedScene()).rois) {
      const n = roi.polygon.length / 2;
      for (let i = 0; i < n; i++) {
        const [ax, ay] = [roi.polygon[2 * ((i + n - 1) % n)]!, roi.polygon[2 * ((i + n - 1) % n) + 1]!];
        const [bx, by] = [roi.polygon[2 * i]!, roi.polygon[2 * i + 1]!];
        const [cx, cy] = [roi.polygon[2 * ((i + 1) % n)]!, roi.polygon[2 * ((i + 1) % n) + 1]!];
        expect((bx - ax) * (cy - by) - (by - ay) * (cx - bx)).not.toBe(0);
      }
    }
  });
});

describe("measurements", () => {
  it("equal a direct computation on each mask", () => {
    const scene = mixedScene();
    const { labels, rois } = roisOf(scene);
    for (const roi of rois) {
      const xs: number[] = [],
        ys: number[] = [];
      labels.forEach((v, i) => {
        if (v === roi.index + 1) {
          xs.push(i % scene.width);
          ys.push(Math.floor(i / scene.width));
        }
      });
      expect(roi.area_px).toBe(xs.length);
      expect(roi.centroid_x).toBeCloseTo(xs.reduce((a, b) => a + b, 0) / xs.length + 0.5, 10);
      expect(roi.centroid_y).toBeCloseTo(ys.reduce((a, b) => a + b, 0) / ys.length + 0.5, 10);
      expect([roi.bbox_x, roi.bbox_y, roi.bbox_w, roi.bbox_h]).toEqual([
        Math.min(...xs),
        Math.min(...ys),
        Math.max(...xs) - Math.min(...xs) + 1,
        Math.max(...ys) - Math.min(...ys) + 1,
      ]);
    }
  });

  it("give ImageJ's traced perimeter: a w×h rectangle measures 2(w+h) − 4(2 − √2)", () => {
    const scene = emptyLabels(30, 30);
    paintRect(scene, 4, 6, 10, 7, 1);
    const [roi] = roisOf(scene).rois;
    expect(roi!.perimeter_px).toBeCloseTo(34 - 4 * (2 - Math.SQRT2), 12);
    expect(tracedPerimeter(Int32Array.from([0, 0, 2, 0, 2, 2, 0, 2]))).toBeCloseTo(8 - 4 * (2 - Math.SQRT2), 12);
  });

  it("order ROIs by the raster position of their first pixel, label = index + 1", () => {
    const { labels, rois } = roisOf(mixedScene());
    rois.forEach((roi, i) => {
      expect(roi.index).toBe(i);
      if (i > 0) expect(roi.bbox_y).toBeGreaterThanOrEqual(rois[i - 1]!.bbox_y);
      const first = labels.indexOf(i + 1);
      expect([first % 160, Math.floor(first / 160)]).toEqual([roi.polygon[0], roi.polygon[1]]);
    });
  });

  it("report confluency as the foreground fraction", () => {
    const scene = emptyLabels(10, 10);
    paintRect(scene, 0, 0, 5, 5, 1);
    expect(confluency(scene.labels)).toBe(0.25);
  });
});
