// `segment --overlay` on an image too large for one: a reason naming its size, no file, no crash.
// (The overlay itself is checked against the local stack in segment-cli.test.ts.)
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { crc32 } from "node:zlib";
import { afterAll, describe, expect, it } from "vitest";
import { OverlaySkipped, polygonsOf, writeOverlay } from "../../client/overlay.ts";

const work = mkdtempSync(join(tmpdir(), "cellseg-overlay-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function chunk(type: string, data: Uint8Array): Buffer {
  const body = Buffer.concat([Buffer.from(type, "latin1"), data]);
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

/**
 * A PNG whose header says width × height, 8-bit gray, its pixel data filler: only the size is
 * read. The filler is as long as the most compressed data of that size could be, which is all the
 * opener checks before rows are decoded.
 */
function pngHeaderOnly(width: number, height: number): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 0, 0, 0, 0], 8);
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([
    signature,
    chunk("IHDR", ihdr),
    chunk("IDAT", new Uint8Array(Math.ceil(((width + 1) * height) / 1000))),
    chunk("IEND", new Uint8Array()),
  ]);
}

describe("the overlay of an image above 64 megapixels", () => {
  it("is skipped with its size said, before any pixel is decoded, and no file is written", async () => {
    const image = join(work, "slide.png");
    writeFileSync(image, pngHeaderOnly(10_000, 9_000));
    writeFileSync(join(work, "rois.geojson"), '{"type":"FeatureCollection","features":[]}');
    const attempt = writeOverlay(image, work);
    await expect(attempt).rejects.toThrow(OverlaySkipped);
    await expect(attempt).rejects.toThrow("10000x9000 is 86 MP, more than the 64 MP an overlay is made for");
    expect(existsSync(join(work, "slide-overlay.png"))).toBe(false);
  });
});

describe("the overlay of QuPath cell objects (--cell-objects)", () => {
  it("draws each cell and the nucleus inside it, not the cells alone", () => {
    const ring = (x: number, y: number, s: number) => [
      [x, y],
      [x + s, y],
      [x + s, y + s],
      [x, y + s],
      [x, y],
    ];
    const cells = {
      features: [
        { geometry: { type: "Polygon", coordinates: [ring(0, 0, 10)] }, nucleusGeometry: { type: "Polygon", coordinates: [ring(3, 3, 4)] } },
        { geometry: { type: "Polygon", coordinates: [ring(20, 0, 10)] }, nucleusGeometry: { type: "Polygon", coordinates: [ring(23, 3, 4)] } },
      ],
    };
    expect(polygonsOf(cells)).toEqual([[ring(0, 0, 10)], [ring(3, 3, 4)], [ring(20, 0, 10)], [ring(23, 3, 4)]]);
    // Nuclei alone (the default export) are drawn as they are.
    expect(polygonsOf({ features: [{ geometry: { type: "Polygon", coordinates: [ring(3, 3, 4)] } }] })).toEqual([[ring(3, 3, 4)]]);
  });
});
