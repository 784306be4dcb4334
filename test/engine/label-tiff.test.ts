// The shared tiled label TIFF writer (schema/label-tiff.ts), read back with the engine's own TIFF
// decoder: labels above 65,535, edge tiles, classic and BigTIFF, one pass or two.
import { describe, expect, it } from "vitest";
import { LABEL_TIFF_BAND_BYTES, LabelTiffWriter, type LabelTiffOptions } from "../../schema/label-tiff.ts";
import { decodeImage, probeImage } from "../../common/decode/index.ts";
import { readTiffFile, Tag } from "../../common/decode/tiff-directory.ts";

/** Labels from 70,000 upwards with background holes, so 32 bits and zeros both show. */
function labelsOf(width: number, height: number): Uint32Array {
  const labels = new Uint32Array(width * height);
  for (let i = 0; i < labels.length; i++) labels[i] = i % 7 === 3 ? 0 : 70_000 + i;
  return labels;
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** The streaming way: measure every band, then the header, then every band again. */
function twoPasses(labels: Uint32Array, width: number, height: number, options?: LabelTiffOptions): { file: Uint8Array; writer: LabelTiffWriter } {
  const writer = new LabelTiffWriter(width, height, options);
  const band = (b: number) => labels.subarray(b * writer.tileHeight * width);
  for (let b = 0; b < writer.bands; b++) writer.encodeBand(band(b), b);
  const parts = [writer.header()];
  for (let b = 0; b < writer.bands; b++) parts.push(writer.encodeBand(band(b), b));
  return { file: concat(parts), writer };
}

describe("LabelTiffWriter", () => {
  it("writes 32-bit labels that the engine's decoder reads back exactly, edge tiles included", () => {
    const [width, height] = [300, 270];
    const labels = labelsOf(width, height);
    const { file, writer } = twoPasses(labels, width, height, { description: "labels" });
    expect([writer.tileWidth, writer.tileHeight, writer.tilesAcross, writer.bands, writer.bigTiff]).toEqual([256, 256, 2, 2, false]);
    expect(file.length).toBe(writer.fileBytes);
    expect(probeImage(file)).toMatchObject({ format: "tiff", width, height, channels: 1, bitDepth: 32, sampleFormat: "uint", pages: 1 });
    expect(Array.from(decodeImage(file).data)).toEqual(Array.from(labels));
    const dir = readTiffFile(file).directory(0);
    expect(dir.numbers(Tag.Compression)).toEqual([8]);
    expect(dir.numbers(Tag.Photometric)).toEqual([1]);
    expect(dir.numbers(Tag.SampleFormat)).toEqual([1]);
    expect(dir.tags.get(Tag.ImageDescription)).toBe("labels");
    // Directory first, tiles after it in order, the last one ending the file.
    const offsets = dir.numbers(Tag.TileOffsets)!;
    const counts = dir.numbers(Tag.TileByteCounts)!;
    expect(offsets[0]).toBe(writer.header().length);
    for (let i = 1; i < offsets.length; i++) expect(offsets[i]).toBe(offsets[i - 1]! + counts[i - 1]!);
    expect(offsets.at(-1)! + counts.at(-1)!).toBe(file.length);
  });

  it("writes BigTIFF on request, with 64-bit tile offsets, that decodes to the same labels", () => {
    const [width, height] = [40, 50];
    const labels = labelsOf(width, height);
    const { file, writer } = twoPasses(labels, width, height, { bigTiff: true });
    expect([file[2], file[3]]).toEqual([43, 0]);
    expect(readTiffFile(file).bigTiff).toBe(true);
    expect([writer.tileWidth, writer.tileHeight]).toEqual([48, 64]);
    expect(Array.from(decodeImage(file).data)).toEqual(Array.from(labels));
  });

  it("compresses once when the bands are kept: the same file as two passes", () => {
    const [width, height] = [100, 90];
    const labels = labelsOf(width, height);
    const writer = new LabelTiffWriter(width, height, { tileWidth: 32, tileHeight: 16 });
    const bands = Array.from({ length: writer.bands }, (_, b) => writer.encodeBand(labels.subarray(b * 16 * width), b));
    const once = concat([writer.header(), ...bands]);
    expect(once).toEqual(twoPasses(labels, width, height, { tileWidth: 32, tileHeight: 16 }).file);
    expect(Array.from(decodeImage(once).data)).toEqual(Array.from(labels));
  });

  it("keeps a band of a wide image within its memory budget with shorter tiles", () => {
    const writer = new LabelTiffWriter(100_000, 100_000);
    expect(writer.tileWidth).toBe(256);
    expect(writer.tileHeight % 16).toBe(0);
    expect(writer.tileHeight * writer.tilesAcross * writer.tileWidth * 4).toBeLessThanOrEqual(LABEL_TIFF_BAND_BYTES);
    expect(new LabelTiffWriter(5, 3).tileWidth).toBe(16);
  });

  it("refuses a header before every band is measured, and a second pass that differs from the first", () => {
    const labels = labelsOf(20, 40);
    const writer = new LabelTiffWriter(20, 40, { tileWidth: 16, tileHeight: 16 });
    writer.encodeBand(labels, 0);
    expect(() => writer.header()).toThrow(/bands not encoded yet/);
    writer.encodeBand(labels.subarray(16 * 20), 1);
    writer.encodeBand(labels.subarray(32 * 20), 2);
    expect(writer.header().length).toBeGreaterThan(0);
    expect(() => writer.encodeBand(new Uint32Array(16 * 20), 0)).toThrow(/changed between passes/);
    expect(() => writer.encodeBand(new Uint32Array(10), 1)).toThrow(/needs 320 labels/);
    expect(() => new LabelTiffWriter(10, 10, { tileWidth: 20 })).toThrow(/multiple of 16/);
  });
});
