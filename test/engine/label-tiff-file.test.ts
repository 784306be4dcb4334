// The CLI's 32-bit label TIFF: the service's masks.tif layout written from the cells' outlines,
// holding every cell's pixels exactly.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { decodeImage } from "../../common/decode/index.ts";
import { writeLabelTiff } from "../../gpu-runner/engine/outputs/label-tiff-file.ts";
import { renumberInRasterOrder } from "../../common/geometry/label-image.ts";
import { measureRois } from "../../common/geometry/roi-measure.ts";
import { discField } from "../fixtures/labels.ts";

const dir = mkdtempSync(join(tmpdir(), "label-tiff-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("label TIFF file", () => {
  it("holds every cell's pixels exactly, in tiles across band boundaries", async () => {
    const scene = discField(700, 530, 300, 4, 12, 3); // several 256-px tiles and bands, ragged edges
    const count = renumberInRasterOrder(scene.labels);
    const path = join(dir, "masks.tif");
    await writeLabelTiff(path, 700, 530, measureRois(scene.labels, 700, 530, count), "test labels");
    const read = decodeImage(new Uint8Array(readFileSync(path)));
    expect(read).toMatchObject({ width: 700, height: 530, channels: 1, bitDepth: 32, sampleFormat: "uint" });
    expect(Uint32Array.from(read.data)).toEqual(scene.labels);
  });
});
