// masks.tif decoded by the engine's own TIFF decoder and compared pixel for pixel with the labels
// the ROIs were made from, for the small segmentation and for one of more than 65,535 cells, which
// masks.png refuses.
import { describe, expect, it } from "vitest";
import { decodeImage } from "../../../common/decode/index.ts";
import { readTiffFile, Tag } from "../../../common/decode/tiff-directory.ts";
import { exportErrorStatus } from "../../../worker/exports/index.ts";
import { MasksPngLimitError } from "../../../worker/exports/label-png.ts";
import { exportFrom, exportSmall } from "./helpers/run-export.ts";
import { labelsFromShapes, roisFromShapes, type RunShape } from "../../fixtures/rois-from-runs.ts";
import { SMALL_HEIGHT, SMALL_WIDTH, smallContext, smallShapes } from "./helpers/small-segmentation.ts";
import { concatBytes, readAllBytes } from "./helpers/streams.ts";

/** Every pixel of a width x height image its own one-pixel cell, except every 7th (background). */
function onePixelCells(width: number, height: number): RunShape[] {
  const shapes: RunShape[] = [];
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) if ((y * width + x) % 7 !== 3) shapes.push({ top: y, runs: [[x, x + 1]] });
  return shapes;
}

const sameLabels = (decoded: Float32Array, expected: Uint32Array) => {
  let mismatches = 0;
  for (let i = 0; i < expected.length; i++) if (decoded[i] !== expected[i]) mismatches++;
  return mismatches;
};

describe("masks.tif", () => {
  it("is a tiled, Deflate-compressed 32-bit TIFF that decodes to the small segmentation's labels, pixel for pixel", async () => {
    const file = await exportSmall("masks.tif");
    expect(file.contentType).toBe("image/tiff");
    expect(file.fileName).toBe("Zellkerne _Probe 7_, Färbung µ-2-masks.tif");
    const bytes = await readAllBytes(file.body);
    const image = decodeImage(bytes);
    expect([image.width, image.height, image.channels, image.bitDepth, image.sampleFormat]).toEqual([SMALL_WIDTH, SMALL_HEIGHT, 1, 32, "uint"]);
    expect(Array.from(image.data)).toEqual(Array.from(labelsFromShapes(SMALL_WIDTH, SMALL_HEIGHT, smallShapes)));
    const dir = readTiffFile(bytes).directory(0);
    expect(dir.numbers(Tag.Compression)).toEqual([8]);
    expect(dir.numbers(Tag.SampleFormat)).toEqual([1]);
    expect(dir.numbers(Tag.Photometric)).toEqual([1]);
    expect(dir.count(Tag.TileWidth)).toBe(1);
    expect(dir.tags.get(Tag.ImageDescription)).toBe(
      `Labels of segmentation ${smallContext.segmentationId}: 0 is background, k is ROI k (roi_index); ${smallShapes.length} ROIs`,
    );
  });

  it("holds more than 65,535 cells exactly, streamed as the header and then one piece per band", async () => {
    const [width, height] = [300, 300];
    const shapes = onePixelCells(width, height);
    const rois = roisFromShapes(shapes);
    expect(rois.length).toBeGreaterThan(65_535);
    const description = { imageWidth: width, imageHeight: height, confluency: rois.length / (width * height), modelName: "m", modelVersion: "1" };
    const context = { ...smallContext, imageWidth: width, imageHeight: height };
    const file = await exportFrom("masks.tif", description, rois, context);
    const chunks: Uint8Array[] = [];
    for await (const chunk of file.body) chunks.push(chunk);
    // 300 rows of 256-pixel tiles: two bands, each its own chunk after the header.
    expect(chunks).toHaveLength(3);
    const header = readTiffFile(chunks[0]!).directory(0);
    const offsets = header.numbers(Tag.TileOffsets)!;
    const counts = header.numbers(Tag.TileByteCounts)!;
    expect(offsets).toHaveLength(4);
    expect(counts).toHaveLength(4);
    expect(chunks.map((c) => c.length)).toEqual([offsets[0], counts[0]! + counts[1]!, counts[2]! + counts[3]!]);
    const bytes = concatBytes(chunks);
    const image = decodeImage(bytes);
    expect([image.width, image.height, image.bitDepth]).toEqual([width, height, 32]);
    expect(sameLabels(image.data, labelsFromShapes(width, height, shapes))).toBe(0);
    expect(Math.max(...image.data)).toBe(rois.length);

    const png = exportFrom("masks.png", description, rois, context);
    const refusal = await png.then(
      () => null,
      (e: unknown) => e,
    );
    expect(refusal).toBeInstanceOf(MasksPngLimitError);
    expect(exportErrorStatus(refusal)).toBe(422);
    expect((refusal as Error).message).toBe(
      `This segmentation has ${rois.length} cells; masks.png holds at most 65535 (16-bit labels). Download masks.tif instead: the same label image with 32-bit labels`,
    );
  }, 60_000);
});
