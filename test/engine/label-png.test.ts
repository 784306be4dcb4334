import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decode } from "fast-png";
import { afterAll, describe, expect, it } from "vitest";
import { decodeImage } from "../../common/decode/index.ts";
import { writeLabelPng } from "../../gpu-runner/engine/outputs/label-png.ts";
import type { Roi } from "../../schema/roi.ts";
import { renumberInRasterOrder } from "../../common/geometry/label-image.ts";
import { measureRois } from "../../common/geometry/roi-measure.ts";
import { discField } from "../fixtures/labels.ts";

const dir = mkdtempSync(join(tmpdir(), "label-png-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("label PNG", () => {
  it("holds every cell's pixels exactly, as a 16-bit grayscale PNG that other decoders read (CRCs checked)", async () => {
    const scene = discField(301, 177, 40, 4, 12, 2); // odd sizes: rows are not a round number of bytes
    const count = renumberInRasterOrder(scene.labels); // the engine's numbering: ROI order is raster order
    const rois = measureRois(scene.labels, 301, 177, count);
    const path = join(dir, "masks.png");
    await writeLabelPng(path, 301, 177, rois);
    const png = new Uint8Array(readFileSync(path));
    const read = decode(png, { checkCrc: true });
    expect(read).toMatchObject({ width: 301, height: 177, depth: 16, channels: 1 });
    expect(Uint32Array.from(read.data)).toEqual(scene.labels);
    const engine = decodeImage(png);
    expect(engine).toMatchObject({ width: 301, height: 177, channels: 1, bitDepth: 16 });
    expect(Uint32Array.from(engine.data)).toEqual(scene.labels);
  });

  it("writes label 65,535, the largest a 16-bit PNG holds, and refuses more cells, naming the 32-bit TIFF", async () => {
    const square = (index: number, x: number, y: number): Roi => ({
      index,
      area_px: 1,
      perimeter_px: 4,
      centroid_x: x + 0.5,
      centroid_y: y + 0.5,
      bbox_x: x,
      bbox_y: y,
      bbox_w: 1,
      bbox_h: 1,
      polygon: Int32Array.from([x, y, x + 1, y, x + 1, y + 1, x, y + 1]),
    });
    const side = 256;
    const rois = Array.from({ length: 65_535 }, (_, i) => square(i, i % side, Math.floor(i / side)));
    const path = join(dir, "full.png");
    await writeLabelPng(path, side, side, rois);
    const read = decode(new Uint8Array(readFileSync(path)), { checkCrc: true });
    expect(read.data[65_534]).toBe(65_535);
    expect(read.data[65_535]).toBe(0);
    await expect(writeLabelPng(join(dir, "over.png"), side, side, [...rois, square(65_535, 255, 255)])).rejects.toThrow(
      /65536 cells do not fit a 16-bit PNG.*masks\.tif/,
    );
  });
});
