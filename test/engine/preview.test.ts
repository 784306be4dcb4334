// The viewer's preview: contrast-stretched to 8 bits, a pyramid of 512-px PNG tiles from full
// resolution (bounded in pixels) down to an overview of at most 1024 px on its long side.
import { decode as decodePng } from "fast-png";
import { describe, expect, it } from "vitest";
import { COARSEST_MAX_SIDE, PREVIEW_MAX_PIXELS, previewFactors, previewTiles } from "../../gpu-runner/engine/preview.ts";
import { readPreviewHeader, tileRange } from "../../schema/preview-tiles.ts";

function image(width: number, height: number, channels: number, value: (c: number, x: number, y: number) => number) {
  const data = new Float32Array(width * height * channels);
  for (let c = 0; c < channels; c++) for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) data[(c * height + y) * width + x] = value(c, x, y);
  return { width, height, channels, bitDepth: 16, sampleFormat: "uint" as const, data };
}

function tile(archive: Uint8Array, level: number, column: number, row: number) {
  const { index, dataStart } = readPreviewHeader(archive);
  const range = tileRange(index, dataStart, level, column, row)!;
  return decodePng(archive.subarray(range.offset, range.offset + range.length));
}

describe("previewTiles", () => {
  it("stretches a dim 16-bit image so nuclei are white and background black", () => {
    // Background 300, a bright square of 3000 in the middle: shown linearly both would be near black.
    const dim = image(400, 300, 1, (_c, x, y) => (x >= 150 && x < 250 && y >= 100 && y < 200 ? 3000 : 300 + ((x + y) % 3)));
    const archive = previewTiles(dim);
    const { index } = readPreviewHeader(archive);
    expect(index).toMatchObject({ width: 400, height: 300, tile: 512, levels: [{ factor: 1, width: 400, height: 300, columns: 1, rows: 1 }] });
    const decoded = tile(archive, 0, 0, 0);
    expect(decoded).toMatchObject({ width: 400, height: 300, channels: 1, depth: 8 });
    expect(decoded.data[150 * 400 + 200]).toBe(255);
    expect(decoded.data[10 * 400 + 10]).toBeLessThan(10);
  });

  it("tiles a large image at full resolution and halves it down to a small overview", () => {
    const big = image(2500, 1100, 1, (_c, x, y) => (x >= 2000 && y >= 1000 ? 5000 : x % 7));
    const archive = previewTiles(big);
    const { index } = readPreviewHeader(archive);
    expect(index.levels.map((l) => [l.factor, l.width, l.height, l.columns, l.rows])).toEqual([
      [1, 2500, 1100, 5, 3],
      [2, 1250, 550, 3, 2],
      [4, 625, 275, 2, 1],
    ]);
    // The last full-resolution tile is cut to the image's edge; the bright corner starts in the tile
    // before it at exactly its image coordinates (x 2000, y 1000).
    const edge = tile(archive, 0, 4, 2);
    expect([edge.width, edge.height]).toEqual([2500 - 2048, 1100 - 1024]);
    const inner = tile(archive, 0, 3, 1);
    expect(inner.data[(999 - 512) * 512 + (2000 - 1536)]).toBe(0);
    expect(inner.data[(1000 - 512) * 512 + (1999 - 1536)]).toBe(0);
    expect(inner.data[(1000 - 512) * 512 + (2000 - 1536)]).toBe(255);
    expect(tileRange(index, 0, 0, 5, 0)).toBeNull();
  });

  it("bounds the finest level's pixels and the coarsest level's side", () => {
    expect(previewFactors(400, 300)).toEqual([1]);
    expect(previewFactors(4096, 4096)).toEqual([1, 2, 4]);
    const huge = previewFactors(20000, 15000);
    expect(Math.ceil(20000 / huge[0]!) * Math.ceil(15000 / huge[0]!)).toBeLessThanOrEqual(PREVIEW_MAX_PIXELS);
    expect(huge[0]).toBe(8);
    expect(20000 / huge.at(-1)!).toBeLessThanOrEqual(COARSEST_MAX_SIDE);
  });

  it("shows two channels as a magenta/green composite and three as RGB", () => {
    const two = tile(previewTiles(image(8, 8, 2, (c, x) => (c === 0 ? x : 7 - x))), 0, 0, 0);
    expect(two.channels).toBe(3);
    const right = 3 * 7; // x = 7, y = 0: channel 0 bright, channel 1 dark
    expect([two.data[right], two.data[right + 1], two.data[right + 2]]).toEqual([255, 0, 255]);
    const three = tile(previewTiles(image(8, 8, 4, (c) => c * 10 + 1)), 0, 0, 0);
    expect(three.channels).toBe(3);
  });
});
