// The intensity columns' numbers (gpu-runner/engine/intensity.ts): per cell and channel, from the
// original pixel values, equal to scikit-image's regionprops on the same labels and pixels
// (test/reference/regionprops.json; the pixels are the TIFFs regionprops.py wrote, decoded here by
// the project's own decoder), and the block-wise path's equal to the cells' own pixels in the whole image.
import { readFileSync } from "node:fs";
import { encode as encodePng } from "fast-png";
import { describe, expect, it } from "vitest";
import { decodeImage, type DecodedImage, probeImage } from "../../common/decode/index.ts";
import { inMemoryRegions } from "../../gpu-runner/engine/blocks/region-source.ts";
import { segmentInBlocks } from "../../gpu-runner/engine/blocks/segment-blocks.ts";
import { distinctChannels, measureIntensity, measureOutlineIntensity } from "../../gpu-runner/engine/intensity.ts";
import { measureRois } from "../../common/geometry/roi-measure.ts";
import { loadModelFromBytes } from "../../gpu-runner/engine/model.ts";
import { buildReferenceModel } from "../../gpu-runner/engine/reference-model.ts";
import { INTENSITY_STATS, type Roi } from "../../schema/roi.ts";
import { ScanPolygon } from "../../common/geometry/roi-raster.ts";
import { fixtureLabels } from "../reference/measure-fixture.ts";
import reference from "../reference/regionprops.json";
import { renderNuclei } from "../fixtures/image.ts";
import { discField } from "../fixtures/labels.ts";

const fixture = fixtureLabels();
const tiff = (name: string) => new Uint8Array(readFileSync(new URL(`../reference/tiff/${name}`, import.meta.url)));
const STATS = INTENSITY_STATS.length;

function relative(actual: number, expected: number): number {
  return expected === 0 ? Math.abs(actual) : Math.abs(actual - expected) / Math.abs(expected);
}

/** Statistics of the values, computed the plain way: sums in the given order, a sort for the median. */
function plainStatistics(values: number[]): number[] {
  const sorted = [...values].sort((a, b) => a - b);
  const n = sorted.length;
  const sum = values.reduce((a, b) => a + b, 0);
  const mean = sum / n;
  const median = n % 2 ? sorted[(n - 1) / 2]! : (sorted[n / 2 - 1]! + sorted[n / 2]!) / 2;
  const std = Math.sqrt(values.reduce((a, v) => a + (v - mean) ** 2, 0) / n);
  return [mean, median, std, sorted[0]!, sorted[n - 1]!, sum];
}

describe("intensity per cell and channel", () => {
  for (const name of ["fixture-2ch.ome.tif", "fixture-rgb.tif"] as const) {
    it(`equals regionprops on ${name}: mean, min, max and sum exactly, median and standard deviation to 1e-12`, () => {
      const image = decodeImage(tiff(name));
      expect([image.width, image.height]).toEqual([fixture.width, fixture.height]);
      const measured = measureIntensity(image, fixture.labels, fixture.count);
      const expected = reference.intensity[name] as Record<string, number[][]>;
      expect(Object.keys(expected)).toHaveLength(fixture.count);
      for (const [label, channels] of Object.entries(expected)) {
        const stats = measured[Number(label) - 1]!;
        expect(stats).toHaveLength(image.channels * STATS);
        channels.forEach(([mean, median, std, min, max, sum], c) => {
          const at = c * STATS;
          const where = `label ${label}, channel ${c}`;
          expect(stats[at], where).toBe(mean);
          expect(stats[at + 3], where).toBe(min);
          expect(stats[at + 4], where).toBe(max);
          expect(stats[at + 5], where).toBe(sum);
          expect(relative(stats[at + 1]!, median!), where).toBeLessThan(1e-12);
          expect(relative(stats[at + 2]!, std!), where).toBeLessThan(1e-12);
        });
      }
    });
  }

  it("measures outlines without a label image (an import's ROIs) as regionprops does: the same numbers on fixture-2ch.ome.tif", () => {
    const image = decodeImage(tiff("fixture-2ch.ome.tif"));
    // Outlines traced with holes, as an import stores them (keyhole outlines).
    const rois = measureRois(fixture.labels, fixture.width, fixture.height, fixture.count, { holes: true });
    const fromOutlines = measureOutlineIntensity(image, rois);
    const fromLabels = measureIntensity(image, fixture.labels, fixture.count);
    expect(fromOutlines).toHaveLength(fixture.count);
    fromOutlines.forEach((stats, i) => expect(Array.from(stats), `label ${i + 1}`).toEqual(Array.from(fromLabels[i]!)));
  });

  it("gives overlapping outlines each all of their own pixels, where a label image would give the overlap to one", () => {
    const data = Float32Array.from({ length: 6 * 4 }, (_, i) => i);
    const image: DecodedImage = { width: 6, height: 4, channels: 1, bitDepth: 32, sampleFormat: "float", data };
    const box = (x: number, w: number): Roi => ({
      index: 0,
      polygon: Int32Array.from([x, 0, x + w, 0, x + w, 2, x, 2]),
      area_px: 2 * w,
      perimeter_px: 4 + 2 * w,
      centroid_x: x + w / 2,
      centroid_y: 1,
      bbox_x: x,
      bbox_y: 0,
      bbox_w: w,
      bbox_h: 2,
    });
    // Columns 0-2 and 1-3 of rows 0-1: they share columns 1 and 2.
    const [left, right] = measureOutlineIntensity(image, [box(0, 3), { ...box(1, 3), index: 1 }]);
    expect(Array.from(left!)).toEqual(plainStatistics([0, 1, 2, 6, 7, 8]));
    expect(Array.from(right!)).toEqual(plainStatistics([1, 2, 3, 7, 8, 9]));
  });

  it("names the channels as the OME-TIFF does; the RGB file names none (its columns are c0, c1, c2)", () => {
    expect(probeImage(tiff("fixture-2ch.ome.tif")).channelNames).toEqual(["DAPI", "Cy5"]);
    expect(probeImage(tiff("fixture-rgb.tif"))).toMatchObject({ channels: 3, channelNames: null });
  });

  it("takes an even count's median as the mean of its two middle values, and gives NaN to a cell with a NaN pixel, as numpy", () => {
    const image: DecodedImage = {
      width: 4,
      height: 2,
      channels: 1,
      bitDepth: 32,
      sampleFormat: "float",
      data: Float32Array.from([5, 1, 4, 2, 7, Number.NaN, 3, 3]),
    };
    const labels = Uint32Array.from([1, 1, 1, 1, 2, 2, 0, 0]);
    const [four, nan] = measureIntensity(image, labels, 2);
    expect(Array.from(four!)).toEqual([3, 3, Math.sqrt(2.5), 1, 5, 12]);
    expect(Array.from(nan!).every(Number.isNaN)).toBe(true);
  });

  it("gives block-wise cells the statistics of their own pixels in the whole image, seams or not", async () => {
    const scene = discField(640, 480, 400, 6, 9, 7);
    const gray = renderNuclei(scene);
    // Two channels: the nuclei, and a second one that varies across the image.
    const plane = 640 * 480;
    const data = new Float32Array(2 * plane);
    data.set(gray.data);
    for (let i = 0; i < plane; i++) data[plane + i] = ((i * 7919) % 4093) + (i % 640);
    const image: DecodedImage = { ...gray, channels: 2, data };
    const { onnx, manifest } = buildReferenceModel({ diameter: 15, channels: 1, tileSize: 128 });
    const model = await loadModelFromBytes(onnx, manifest, { executionProvider: "cpu", log: () => {} });
    const rois: Roi[] = [];
    const result = await segmentInBlocks(
      inMemoryRegions(image),
      model,
      { diameter: 15 },
      { coreSide: 100, measureIntensity: true, onCells: (cells) => void rois.push(...cells) },
    );
    expect(result.blocks).toBeGreaterThan(20);
    expect(rois.length).toBeGreaterThan(300);
    const row = new Uint32Array(640);
    for (const roi of rois) {
      // The cell's pixels: those whose centre its outline holds (the export's filling rule).
      const shape = new ScanPolygon([roi.polygon]);
      const pixels: number[] = [];
      for (let y = roi.bbox_y; y < roi.bbox_y + roi.bbox_h; y++) {
        row.fill(0);
        shape.fillRow(y, row, 640, 1);
        for (let x = roi.bbox_x; x < roi.bbox_x + roi.bbox_w; x++) if (row[x] === 1) pixels.push(y * 640 + x);
      }
      expect(pixels).toHaveLength(roi.area_px);
      for (let c = 0; c < 2; c++) {
        // Summed in raster order, as the block sums its own pixels: the same numbers to the last bit.
        const expected = plainStatistics(pixels.map((i) => data[c * plane + i]!));
        expect(Array.from(roi.intensity!.subarray(c * STATS, (c + 1) * STATS)), `cell ${roi.index}, channel ${c}`).toEqual(expected);
      }
    }
  }, 60_000);

  it("measures a gray image stored as RGBA as one channel: alpha is no channel, and identical channels are measured once", () => {
    const width = 6,
      height = 4,
      plane = width * height;
    const gray = Array.from({ length: plane }, (_, i) => (i * 37) % 251);
    // RGBA, every pixel R = G = B, alpha 255: what an image editor saves a gray micrograph as.
    const rgba = Uint8Array.from(gray.flatMap((v) => [v, v, v, 255]));
    const decoded = decodeImage(encodePng({ width, height, data: rgba, depth: 8, channels: 4 }));
    expect(decoded.channels).toBe(3);
    const { image, kept } = distinctChannels(decoded);
    expect(kept).toEqual([0]);
    expect(image.channels).toBe(1);
    expect(Array.from(image.data)).toEqual(gray);
    const labels = Uint32Array.from({ length: plane }, (_, i) => (i < plane / 2 ? 1 : 2));
    const [first] = measureIntensity(image, labels, 2);
    expect(first!.length).toBe(STATS);
    expect(Array.from(first!)).toEqual(plainStatistics(gray.slice(0, plane / 2)));
  });

  it("keeps every channel that differs somewhere, and leaves out only the repeats, in the file's order", () => {
    const plane = 4;
    const data = Float32Array.from([1, 2, 3, 4, /* G = R */ 1, 2, 3, 4, /* B */ 1, 2, 3, 5]);
    const image: DecodedImage = { width: 2, height: 2, channels: 3, bitDepth: 8, sampleFormat: "uint", data };
    const distinct = distinctChannels(image);
    expect(distinct.kept).toEqual([0, 2]);
    expect(Array.from(distinct.image.data)).toEqual([1, 2, 3, 4, 1, 2, 3, 5]);
    const color: DecodedImage = { ...image, data: Float32Array.from({ length: 3 * plane }, (_, i) => i) };
    expect(distinctChannels(color)).toEqual({ image: color, kept: [0, 1, 2] });
  });
});
