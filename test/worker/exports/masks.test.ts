import { decode } from "fast-png";
import { describe, expect, it } from "vitest";
import { crc32 } from "../../../common/crc32.ts";
import { exportFrom, exportSmall } from "./helpers/run-export.ts";
import { inRasterOrder, labelsFromShapes, roisFromShapes, syntheticShapes } from "../../fixtures/rois-from-runs.ts";
import { SMALL_HEIGHT, SMALL_WIDTH, smallContext, smallShapes } from "./helpers/small-segmentation.ts";
import { readAllBytes } from "./helpers/streams.ts";

/** PNG chunks as (type, data, CRC valid?). */
function pngChunks(bytes: Uint8Array): { type: string; length: number; crcOk: boolean }[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const chunks = [];
  for (let at = 8; at < bytes.length; ) {
    const length = view.getUint32(at);
    const type = String.fromCharCode(...bytes.subarray(at + 4, at + 8));
    const crcOk = crc32(bytes.subarray(at + 4, at + 8 + length)) === view.getUint32(at + 8 + length);
    chunks.push({ type, length, crcOk });
    at += 12 + length;
  }
  return chunks;
}

describe("masks.png", () => {
  it("is a 16-bit grayscale PNG that decodes to the segmentation's label image, pixel for pixel", async () => {
    const file = await exportSmall("masks.png");
    expect(file.contentType).toBe("image/png");
    expect(file.fileName.endsWith("-masks.png")).toBe(true);
    const png = decode(await readAllBytes(file.body));
    expect([png.width, png.height, png.depth, png.channels]).toEqual([SMALL_WIDTH, SMALL_HEIGHT, 16, 1]);
    expect(Array.from(png.data)).toEqual(Array.from(labelsFromShapes(SMALL_WIDTH, SMALL_HEIGHT, smallShapes)));
  });

  it("has valid chunk CRCs, IHDR first and IEND last", async () => {
    const chunks = pngChunks(await readAllBytes((await exportSmall("masks.png")).body));
    expect(chunks[0]?.type).toBe("IHDR");
    expect(chunks.at(-1)).toEqual({ type: "IEND", length: 0, crcOk: true });
    expect(chunks.every((c) => c.crcOk)).toBe(true);
    expect(chunks.filter((c) => c.type === "IDAT").length).toBeGreaterThan(0);
  });

  it("renders thousands of touching-row ROIs exactly, wide rows batched and streamed", async () => {
    const shapes = inRasterOrder(syntheticShapes(90, 30, 16, 11));
    const rois = roisFromShapes(shapes);
    const width = 90 * 16,
      height = 30 * 16;
    const file = await exportFrom("masks.png", { imageWidth: width, imageHeight: height, confluency: 0.4, modelName: "m", modelVersion: "1" }, rois, {
      ...smallContext,
      imageWidth: width,
      imageHeight: height,
    });
    const png = decode(await readAllBytes(file.body));
    const expected = labelsFromShapes(width, height, shapes);
    let mismatches = 0;
    for (let i = 0; i < expected.length; i++) if (png.data[i] !== expected[i]) mismatches++;
    expect(mismatches).toBe(0);
    expect(rois.length).toBe(2700);
  });
});
