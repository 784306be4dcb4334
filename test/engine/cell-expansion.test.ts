// Cells around nuclei (gpu-runner/engine/cell-expansion.ts): the growth equals scikit-image's
// expand_labels on the fixture (test/reference/regionprops.json), up to which of two equally near
// nuclei takes a pixel; with oblong pixels it equals brute force; the cells never overlap, hold their
// nucleus, and their cytoplasm's intensities are those of their own pixels less the nucleus's.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { decodeImage } from "../../common/decode/index.ts";
import { attachCells, expandLabels } from "../../gpu-runner/engine/cell-expansion.ts";
import { attachIntensity } from "../../gpu-runner/engine/intensity.ts";
import { measureRois } from "../../common/geometry/roi-measure.ts";
import { ScanPolygon } from "../../common/geometry/roi-raster.ts";
import { INTENSITY_STATS, type Roi } from "../../schema/roi.ts";
import { inMemoryRegions } from "../../gpu-runner/engine/blocks/region-source.ts";
import { segmentInBlocks } from "../../gpu-runner/engine/blocks/segment-blocks.ts";
import { loadModelFromBytes } from "../../gpu-runner/engine/model.ts";
import { buildReferenceModel } from "../../gpu-runner/engine/reference-model.ts";
import { segmentImage } from "../../gpu-runner/engine/segment.ts";
import { renderNuclei } from "../fixtures/image.ts";
import { discField } from "../fixtures/labels.ts";
import { fixtureLabels } from "../reference/measure-fixture.ts";
import reference from "../reference/regionprops.json";

const fixture = fixtureLabels();
const { width, height, labels, count } = fixture;

/** Squared distance (pixel of sx × sy) from pixel i to the nearest pixel of each label. */
function nearestDistances(i: number, sx = 1, sy = 1): Map<number, number> {
  const x = i % width,
    y = Math.floor(i / width);
  const best = new Map<number, number>();
  for (let j = 0; j < labels.length; j++) {
    const k = labels[j]!;
    if (k === 0) continue;
    const d = ((j % width) - x) ** 2 * sx * sx + (Math.floor(j / width) - y) ** 2 * sy * sy;
    if (d < (best.get(k) ?? Infinity)) best.set(k, d);
  }
  return best;
}

/** Each pixel of `grown` must be a nucleus within `distance` and a nearest one; background only where none is. */
function expectNearestWithin(grown: Uint32Array, distance: number, sx = 1, sy = 1): { ties: number } {
  let ties = 0;
  for (let i = 0; i < grown.length; i++) {
    const near = nearestDistances(i, sx, sy);
    const closest = Math.min(...near.values());
    if (closest > distance * distance + 1e-9) {
      expect(grown[i], `pixel ${i}`).toBe(0);
      continue;
    }
    expect(near.get(grown[i]!), `pixel ${i} goes to a nearest nucleus`).toBeCloseTo(closest, 9);
    if ([...near.values()].filter((d) => Math.abs(d - closest) < 1e-9).length > 1) ties++;
  }
  return { ties };
}

describe("cell expansion", () => {
  for (const distance of ["3", "5.5"] as const) {
    it(`grows the nuclei ${distance} px as expand_labels does, differing only where two nuclei are equally near`, () => {
      const expected = Uint32Array.from(reference.expanded[distance].split(",").map(Number));
      const grown = expandLabels(labels, width, height, Number(distance));
      const { ties } = expectNearestWithin(grown, Number(distance));
      let differ = 0;
      for (let i = 0; i < grown.length; i++) {
        if (grown[i] === expected[i]) continue;
        differ++;
        // Where they differ, both took an equally near nucleus.
        const near = nearestDistances(i);
        expect(near.get(grown[i]!)).toBe(near.get(expected[i]!));
      }
      expect(differ).toBeLessThanOrEqual(ties);
      // The fixture's nuclei compete: growth reaches between neighbours, and some pixels are ties.
      const background = (a: Uint32Array) => a.reduce((n, v) => n + (v === 0 ? 1 : 0), 0);
      expect(background(grown)).toBeLessThan(background(labels) - 1500);
    });
  }

  it("measures the distance in the pixel's units, oblong pixels included", () => {
    const grown = expandLabels(labels, width, height, 2.5, 0.5, 1.25);
    expectNearestWithin(grown, 2.5, 0.5, 1.25);
  });

  it("gives every nucleus one cell around it, no two overlapping, and the cytoplasm's intensities", () => {
    const image = decodeImage(new Uint8Array(readFileSync(new URL("../reference/tiff/fixture-2ch.ome.tif", import.meta.url))));
    const rois = measureRois(labels, width, height, count, { holes: true });
    attachIntensity(rois, image, labels);
    attachCells(rois, image, labels, 4);
    const owner = new Int32Array(width * height).fill(-1);
    const row = new Uint32Array(width);
    const plane = width * height;
    for (const roi of rois) {
      const cell = roi.cell!;
      expect(cell.area_px).toBeGreaterThan(roi.area_px);
      const shape = new ScanPolygon([cell.polygon]);
      const cytoplasm: number[] = [];
      let area = 0;
      for (let y = cell.bbox_y; y < cell.bbox_y + cell.bbox_h; y++) {
        row.fill(0);
        shape.fillRow(y, row, width, 1);
        for (let x = 0; x < width; x++) {
          if (row[x] !== 1) continue;
          const i = y * width + x;
          expect(owner[i], `pixel ${x},${y} in two cells`).toBe(-1);
          owner[i] = roi.index;
          area++;
          if (labels[i] === 0) cytoplasm.push(i);
          else expect(labels[i]).toBe(roi.index + 1); // no other nucleus inside
        }
      }
      expect(area).toBe(cell.area_px);
      // The whole nucleus lies inside its cell.
      for (let i = 0; i < plane; i++) if (labels[i] === roi.index + 1) expect(owner[i]).toBe(roi.index);
      for (let c = 0; c < 2; c++) {
        const values = cytoplasm.map((i) => image.data[c * plane + i]!);
        const sum = values.reduce((a, b) => a + b, 0);
        const sorted = [...values].sort((a, b) => a - b);
        const at = c * INTENSITY_STATS.length;
        const stats = cell.cytoplasmIntensity!;
        expect([stats[at], stats[at + 3], stats[at + 4], stats[at + 5]]).toEqual([sum / values.length, sorted[0], sorted.at(-1), sum]);
      }
    }
  });
});

describe("cell expansion block by block", () => {
  it("grows each nucleus kept by a block into the cell the whole image gives it, seams or not", async () => {
    const scene = discField(640, 480, 400, 6, 9, 7);
    const image = renderNuclei(scene);
    const { onnx, manifest } = buildReferenceModel({ diameter: 15, channels: 1, tileSize: 128 });
    const model = await loadModelFromBytes(onnx, manifest, { executionProvider: "cpu", log: () => {} });
    const expansion = { distance: 4, sx: 1, sy: 1 };

    const whole = await segmentImage({ ...image, data: image.data.slice() }, model, { diameter: 15 });
    attachCells(whole.rois, image, whole.labels, expansion.distance);
    const blockwise: Roi[] = [];
    const result = await segmentInBlocks(
      inMemoryRegions(image),
      model,
      { diameter: 15 },
      { coreSide: 100, measureIntensity: true, cellExpansion: expansion, onCells: (cells) => void blockwise.push(...cells) },
    );
    expect(result.blocks).toBeGreaterThan(20);
    expect(result.margin).toBe(2 * 15 + 2 * 4);

    // Nuclei are matched by their outline. A cell is decided by its nucleus and the nuclei within
    // twice the distance: where all of those came out alike both ways, the cell must be the same.
    const key = (polygon: Int32Array) => Array.from(polygon).join(",");
    const wholeCells = new Map(whole.rois.map((r) => [key(r.polygon), r.cell!]));
    const inBlocks = new Set(blockwise.map((r) => key(r.polygon)));
    const reach = 2 * expansion.distance;
    const near = (a: Roi, b: Roi) =>
      b.bbox_x <= a.bbox_x + a.bbox_w + reach &&
      b.bbox_x + b.bbox_w >= a.bbox_x - reach &&
      b.bbox_y <= a.bbox_y + a.bbox_h + reach &&
      b.bbox_y + b.bbox_h >= a.bbox_y - reach;
    let matched = 0;
    for (const roi of blockwise) {
      const cell = wholeCells.get(key(roi.polygon));
      if (!cell || !whole.rois.every((other) => !near(roi, other) || inBlocks.has(key(other.polygon)))) continue;
      matched++;
      expect(key(roi.cell!.polygon), `cell of nucleus ${roi.index}`).toBe(key(cell.polygon));
      expect(roi.cell!.area_px).toBe(cell.area_px);
      expect(Array.from(roi.cell!.cytoplasmIntensity!)).toEqual(Array.from(cell.cytoplasmIntensity!));
    }
    // Most nuclei and their neighbours come out pixel for pixel alike (the rest differ by a few edge
    // pixels: a block is normalised by the survey's percentiles, the whole image by its own).
    expect(matched).toBeGreaterThan(0.7 * whole.rois.length);
  }, 120_000);
});
