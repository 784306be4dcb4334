// Block-wise segmentation: an image cut into blocks with margins gives the cells the whole image
// gives, each cell once and whole (no halves at seams, no duplicates), in raster order, with the
// image's own scaling and size measured on samples of it.
import { describe, expect, it } from "vitest";
import type { Roi } from "../../schema/roi.ts";
import { renderLabels } from "../../common/geometry/roi-raster.ts";
import { averagePrecision } from "../../common/scoring/average-precision.ts";
import { blockGrid } from "../../gpu-runner/engine/blocks/block-grid.ts";
import { RasterOrderQueue } from "../../gpu-runner/engine/blocks/raster-order.ts";
import { inMemoryRegions } from "../../gpu-runner/engine/blocks/region-source.ts";
import { bandLayout, coreSideFor, segmentInBlocks } from "../../gpu-runner/engine/blocks/segment-blocks.ts";
import { loadModelFromBytes } from "../../gpu-runner/engine/model.ts";
import { buildReferenceModel } from "../../gpu-runner/engine/reference-model.ts";
import { segmentImage } from "../../gpu-runner/engine/segment.ts";
import { InputError } from "../../gpu-runner/engine/faults.ts";
import { renderNuclei } from "../fixtures/image.ts";
import { discField } from "../fixtures/labels.ts";
import { bytesSource, countedSource, openImageRegions } from "../../common/decode/region-reader.ts";
import { ImageDecodeError } from "../../common/decode/index.ts";
import { MAX_READ_FACTOR } from "../../schema/work-limits.ts";
import { encodePng } from "./helpers/png-writer.ts";
import { encodeTiff } from "../fixtures/tiff-writer.ts";
import { displayRanges } from "../../gpu-runner/engine/preview.ts";
import { readSample } from "../../common/modality.ts";

async function referenceModel(diameter: number) {
  const { onnx, manifest } = buildReferenceModel({ diameter, channels: 1, tileSize: 128 });
  return loadModelFromBytes(onnx, manifest, { executionProvider: "cpu", log: () => {} });
}

async function* each(rois: Roi[]): AsyncGenerator<Roi> {
  yield* rois;
}

describe("the block grid", () => {
  it("tiles the image with cores of nearly equal size, each read with its margin inside the image", () => {
    const grid = blockGrid(1000, 700, 300, 40);
    expect([grid.rows, grid.columns]).toEqual([3, 4]);
    const covered = new Uint8Array(1000 * 700);
    for (const { core, read } of grid.blocks) {
      expect(core.width === 250 && [233, 234].includes(core.height)).toBe(true);
      for (let y = core.y; y < core.y + core.height; y++) for (let x = core.x; x < core.x + core.width; x++) covered[y * 1000 + x]!++;
      expect(read.x).toBe(Math.max(0, core.x - 40));
      expect(read.y + read.height).toBe(Math.min(700, core.y + core.height + 40));
    }
    expect(covered.every((n) => n === 1)).toBe(true);
    expect(grid.blocks.map((b) => [b.row, b.column]).slice(0, 5)).toEqual([
      [0, 0],
      [0, 1],
      [0, 2],
      [0, 3],
      [1, 0],
    ]);
  });

  it("sizes blocks from the memory budget, smaller when the network enlarges the image", () => {
    const plain = coreSideFor(768 * 2 ** 20, 60, 1);
    expect((plain + 120) ** 2 * 64).toBeLessThanOrEqual(768 * 2 ** 20);
    expect(coreSideFor(768 * 2 ** 20, 60, 2)).toBeLessThan(plain / 1.9);
    expect(coreSideFor(4 * 2 ** 20, 60, 1)).toBe(256); // never below a useful block
  });

  it("counts the margins in the budget: a block whose margins alone blow it is refused as the input's, not run", () => {
    // 640 MB holds blocks of 3238² at the network's scale: margins of 1000 px leave a core of 1238.
    expect(coreSideFor(640 * 2 ** 20, 1000, 1)).toBe(1238);
    // Margins of 2 x 1000 px (diameter) + 2 x 4000 px (500 µm at 0.125 µm a pixel), as asked before the limits.
    const refused = (() => {
      try {
        return coreSideFor(640 * 2 ** 20, 10_000, 1);
      } catch (error) {
        return error;
      }
    })();
    expect(refused).toBeInstanceOf(InputError);
    expect((refused as Error).message).toBe(
      "block margins of 10000 px (twice the diameter and twice the cell expansion's reach) alone need 24415 MiB, past the block memory of 640 MiB",
    );
    // The network's enlargement counts too: 4x the pixels at half the model's diameter.
    expect(() => coreSideFor(640 * 2 ** 20, 1000, 2)).toThrow(/alone need 977 MiB, past the block memory of 640 MiB/);
  });
});

describe("cells leaving in raster order", () => {
  const cell = (x: number, y: number): Roi => ({
    index: -1,
    area_px: 4,
    perimeter_px: 8,
    centroid_x: x + 1,
    centroid_y: y + 1,
    bbox_x: x,
    bbox_y: y,
    bbox_w: 2,
    bbox_h: 2,
    polygon: Int32Array.from([x, y, x + 2, y, x + 2, y + 2, x, y + 2]),
  });

  it("wait until no later block can start above them, then leave sorted by their first pixel and numbered", () => {
    const queue = new RasterOrderQueue(100);
    queue.add(cell(50, 10));
    queue.add(cell(5, 40));
    queue.add(cell(10, 10));
    const first = queue.releaseAbove(30);
    expect(first.map((r) => [r.bbox_x, r.bbox_y, r.index])).toEqual([
      [10, 10, 0],
      [50, 10, 1],
    ]);
    queue.add(cell(0, 35));
    expect(queue.releaseAll().map((r) => [r.bbox_x, r.bbox_y, r.index])).toEqual([
      [0, 35, 2],
      [5, 40, 3],
    ]);
    expect(queue.released).toBe(4);
  });
});

describe("segmentInBlocks", () => {
  const scene = discField(640, 480, 400, 6, 9, 7);
  const image = renderNuclei(scene);

  it("agrees with the whole image's segmentation when blocks are forced small (AP@0.5 >= 0.99)", async () => {
    const model = await referenceModel(15);
    const whole = await segmentImage(image, model, { diameter: 15 });
    const rois: Roi[] = [];
    const fractions: number[] = [];
    const result = await segmentInBlocks(
      inMemoryRegions(image),
      model,
      { diameter: 15 },
      { coreSide: 128, onCells: (cells) => void rois.push(...cells), onProgress: (f) => fractions.push(f) },
    );
    expect(result.blocks).toBe(20);
    expect(result.margin).toBe(30); // twice the diameter
    expect(result.cellCount).toBe(rois.length);
    expect(rois.map((r) => r.index)).toEqual(rois.map((_, i) => i));
    expect(rois.every((r, i) => i === 0 || r.bbox_y >= rois[i - 1]!.bbox_y)).toBe(true);

    const labels = await renderLabels(640, 480, each(rois));
    const agreement = averagePrecision(whole.labels, labels, [0.5, 0.9]);
    expect(agreement.ap[0]).toBeGreaterThanOrEqual(0.99);
    expect(Math.abs(rois.length - whole.rois.length)).toBeLessThanOrEqual(2);
    // Against the truth, block-wise does as well as whole-image.
    expect(averagePrecision(scene.labels, labels).ap[0]).toBeGreaterThanOrEqual(averagePrecision(scene.labels, whole.labels).ap[0]! - 0.01);
    expect(fractions.at(-1)).toBe(1);
    expect(fractions.every((f, i) => i === 0 || f >= fractions[i - 1]!)).toBe(true);
  });

  it("keeps every cell once and whole where seams cut through it", async () => {
    const model = await referenceModel(15);
    const rois: Roi[] = [];
    await segmentInBlocks(inMemoryRegions(image), model, { diameter: 15 }, { coreSide: 100, onCells: (cells) => void rois.push(...cells) });
    const labels = await renderLabels(640, 480, each(rois));
    // Every true nucleus crossed by a core seam is matched by one predicted cell covering it (IoU >= 0.75).
    const seamsX = blockGrid(640, 480, 100, 30)
      .blocks.filter((b) => b.row === 0 && b.column > 0)
      .map((b) => b.core.x);
    const crossing = new Set<number>();
    for (let y = 0; y < 480; y++)
      for (const x of seamsX) {
        const k = scene.labels[y * 640 + x]!;
        if (k !== 0 && scene.labels[y * 640 + x - 1] === k) crossing.add(k);
      }
    expect(crossing.size).toBeGreaterThan(20);
    for (const k of crossing) {
      const owners = new Map<number, number>();
      let size = 0;
      for (let i = 0; i < labels.length; i++)
        if (scene.labels[i] === k) {
          size++;
          if (labels[i]) owners.set(labels[i]!, (owners.get(labels[i]!) ?? 0) + 1);
        }
      const [, covered] = [...owners.entries()].sort((a, b) => b[1] - a[1])[0] ?? [0, 0];
      expect(covered / size, `nucleus ${k}`).toBeGreaterThanOrEqual(0.75);
    }
  });

  it("refuses a cell expansion whose reach blows the block memory before reading a block", async () => {
    const model = await referenceModel(15);
    let blocksRead = 0;
    // 1 µm at a file's 1e-4 µm a pixel reaches 10,000 px: margins of 20,030 px.
    const refused = segmentInBlocks(
      inMemoryRegions(image),
      model,
      { diameter: 15 },
      { memoryBudgetBytes: 16 * 2 ** 20, cellExpansion: { distance: 1, sx: 1e-4, sy: 1e-4 }, onCells: () => {}, onRead: () => void blocksRead++ },
    );
    await expect(refused).rejects.toThrow(InputError);
    await expect(refused).rejects.toThrow(/block margins of 20030 px .* alone need \d+ MiB, past the block memory of 16 MiB/);
    expect(blocksRead).toBe(0);
  });

  it("measures the diameter and the normalisation on samples of the image with diameter auto", async () => {
    const model = await referenceModel(15);
    const whole = await segmentImage(image, model, { diameter: "auto" });
    const rois: Roi[] = [];
    const result = await segmentInBlocks(inMemoryRegions(image), model, { diameter: "auto" }, { coreSide: 200, onCells: (cells) => void rois.push(...cells) });
    expect(result.diameterEstimate).toBeDefined();
    expect(Math.abs(Math.log(result.diameter / whole.diameter))).toBeLessThan(Math.log(1.2));
    expect(result.modality).toEqual({ modality: "fluorescence", source: "detected", reason: expect.any(String) });
    // How the image is shown: the stretch of the same sample windows a preview job reads (preview-job.ts).
    expect(result.display).toEqual(displayRanges(await readSample(inMemoryRegions(image))));
    expect(result.display![0]!.high).toBeGreaterThan(result.display![0]!.low);
    const labels = await renderLabels(640, 480, each(rois));
    expect(averagePrecision(scene.labels, labels).ap[0]).toBeGreaterThanOrEqual(0.9);
  });

  describe("reading a row-sequential file band by band", () => {
    // 20 blocks of 128-px cores (5 across, 4 down) with margins of 30 px: read one by one from a
    // PNG, the old reader inflated the file again for every block; a strip TIFF decoded every strip
    // again for every block of its row.
    // Noise in the low byte keeps the files from compressing into one of the PNG reader's 256 KiB windows.
    let seed = 7;
    const values = Array.from(image.data, (v) => v + ((seed = (seed * 1103515245 + 12345) % 2 ** 31) >> 23));
    const noisy = { ...image, data: Float32Array.from(values) };
    const files = {
      PNG: encodePng({ width: 640, height: 480, colourType: 0, bitDepth: 16, values, idatBytes: 8192 }),
      "Deflate-strip TIFF": encodeTiff([{ width: 640, height: 480, samplesPerPixel: 1, values, kind: "uint16", compression: "deflate", rowsPerStrip: 8 }]),
    };
    const params = { diameter: 15 };

    for (const [name, bytes] of Object.entries(files)) {
      it(`reads a ${name} segmented in 20 blocks at most ${MAX_READ_FACTOR} times over, with the cells of the image in memory`, async () => {
        const model = await referenceModel(15);
        const counted = countedSource(bytesSource(bytes), MAX_READ_FACTOR * bytes.length);
        const fromFile: Roi[] = [];
        const result = await segmentInBlocks(await openImageRegions(counted), model, params, { coreSide: 128, onCells: (c) => void fromFile.push(...c) });
        expect(result.blocks).toBe(20);
        expect(bytes.length).toBeGreaterThan(400_000);
        // The survey's pass and the blocks' pass (with diameter "auto", the diameter window's too),
        // the headers, and strips cut by a band's edges.
        const times = counted.bytesRead / bytes.length;
        expect(times).toBeLessThanOrEqual(2.25);
        const inMemory: Roi[] = [];
        await segmentInBlocks(inMemoryRegions(noisy), model, params, { coreSide: 128, onCells: (c) => void inMemory.push(...c) });
        expect(fromFile.map((r) => [r.centroid_x, r.centroid_y, r.area_px])).toEqual(inMemory.map((r) => [r.centroid_x, r.centroid_y, r.area_px]));
      });

      it(`refuses, with the reason, a ${name} whose reads would pass ${MAX_READ_FACTOR} times the file (no rows kept between blocks)`, async () => {
        const model = await referenceModel(15);
        const counted = countedSource(bytesSource(bytes), MAX_READ_FACTOR * bytes.length);
        const regions = await openImageRegions(counted);
        regions.keepRows!(1);
        // The reader as block-wise reading saw it before: regions read one at a time, nothing kept.
        const unbanded = { width: regions.width, height: regions.height, channels: regions.channels, readRegion: regions.readRegion };
        const refusal = await segmentInBlocks(unbanded, model, params, { coreSide: 128, onCells: () => {} }).catch((error: unknown) => error);
        expect(refusal).toBeInstanceOf(ImageDecodeError);
        expect((refusal as Error).message).toMatch(/would take more than \d+ bytes, 3\.0 times its \d+-byte file/);
        expect(counted.bytesRead).toBeLessThanOrEqual(MAX_READ_FACTOR * bytes.length);
      });
    }

    it("sizes a band with its block in the budget: full-width bands while a core of 256 px fits beside one", () => {
      // A 60000-px-wide RGB 8-bit strip TIFF: 180,000 bytes a row.
      const wide = bandLayout(640 * 2 ** 20, 60, 1, 180_000);
      expect(wide.fullBands).toBe(true);
      expect(wide.keptRows).toBe(wide.coreSide + 120);
      expect(wide.keptRows * 180_000 + wide.keptRows ** 2 * 64).toBeLessThanOrEqual(640 * 2 ** 20);
      // Margins of 1000 px beside 1.8 MB rows: no full band fits; the blocks as for random reads, the rest kept.
      const narrow = bandLayout(640 * 2 ** 20, 1000, 1, 1_800_000);
      expect(narrow).toMatchObject({ fullBands: false, coreSide: 1238 });
      expect(narrow.keptRows).toBe(0);
    });
  });
});
