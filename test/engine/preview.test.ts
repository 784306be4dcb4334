// The viewer's preview: contrast-stretched to 8 bits, a pyramid of 512-px PNG tiles from full
// resolution (bounded in pixels) down to an overview of at most 1024 px on its long side.
import { decode as decodePng } from "fast-png";
import { describe, expect, it } from "vitest";
import { COARSEST_MAX_SIDE, displayRanges, fullResolutionTiles, PREVIEW_MAX_PIXELS, previewFactors, previewTiles } from "../../gpu-runner/engine/preview.ts";
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

describe("fullResolutionTiles", () => {
  it("packs a block's core at full resolution, tiled from the core's corner, under the given stretch", () => {
    // A 1300 x 900 block read with its margin; its core is 1100 x 600 from (100, 50) of it.
    const value = (x: number, y: number) => (x * 7 + y * 3) % 300;
    const region = image(1300, 900, 1, (_c, x, y) => value(x, y));
    const core = { x: 100, y: 50, width: 1100, height: 600 };
    const pack = fullResolutionTiles(region, core, [{ low: 10, high: 265 }]);
    const { index } = readPreviewHeader(pack);
    expect(index).toMatchObject({ width: 1100, height: 600, tile: 512, levels: [{ factor: 1, width: 1100, height: 600, columns: 3, rows: 2 }] });
    // Every pixel of every tile is the core's, stretched: 10 -> 0, 265 -> 255, clipped beyond.
    for (let row = 0; row < 2; row++) {
      for (let column = 0; column < 3; column++) {
        const decoded = tile(pack, 0, column, row);
        expect([decoded.width, decoded.height]).toEqual([Math.min(512, 1100 - 512 * column), Math.min(512, 600 - 512 * row)]);
        expect(decoded.channels).toBe(1);
        let wrong = 0;
        for (let y = 0; y < decoded.height; y++)
          for (let x = 0; x < decoded.width; x++) {
            const v = value(core.x + 512 * column + x, core.y + 512 * row + y);
            if (decoded.data[y * decoded.width + x] !== Math.max(0, Math.min(255, v - 10))) wrong++;
          }
        expect(wrong).toBe(0);
      }
    }
  });

  it("shows up to three channels as the pyramid does, and refuses a display of the wrong channel count", () => {
    const region = image(20, 10, 4, (c, x) => c * 100 + x);
    const display = [
      { low: 0, high: 255 },
      { low: 100, high: 355 },
      { low: 200, high: 455 },
    ];
    const decoded = tile(fullResolutionTiles(region, { x: 5, y: 2, width: 10, height: 6 }, display), 0, 0, 0);
    expect([decoded.width, decoded.height, decoded.channels]).toEqual([10, 6, 3]);
    expect(Array.from(decoded.data.subarray(0, 3))).toEqual([5, 5, 5]);
    expect(() => fullResolutionTiles(region, { x: 0, y: 0, width: 4, height: 4 }, display.slice(0, 1))).toThrow(/1 display range/);
  });

  it("gives the pyramid the same contrast when it is given the same display", () => {
    const dim = image(64, 32, 1, (_c, x) => 1000 + x);
    const display = displayRanges(dim);
    expect(display).toHaveLength(1);
    // Its own range by default; a fixed one when given.
    expect(tile(previewTiles(dim), 0, 0, 0).data).toEqual(tile(previewTiles(dim, undefined, display), 0, 0, 0).data);
    const fixed = tile(previewTiles(dim, undefined, [{ low: 1000, high: 1255 }]), 0, 0, 0);
    expect(fixed.data[0]).toBe(0);
    expect(fixed.data[63]).toBe(63);
    expect(fixed.data).toEqual(tile(fullResolutionTiles(dim, { x: 0, y: 0, width: 64, height: 32 }, [{ low: 1000, high: 1255 }]), 0, 0, 0).data);
  });
});
