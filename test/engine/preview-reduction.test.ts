// A large image's preview made from its parts as they are read: the same pyramid as the preview
// of the whole image, without ever holding it.
import { decode as decodePng } from "fast-png";
import { describe, expect, it } from "vitest";
import { blockGrid } from "../../gpu-runner/engine/blocks/block-grid.ts";
import { cutRegion } from "../../common/decode/region.ts";
import type { DecodedImage } from "../../common/decode/index.ts";
import { previewTiles } from "../../gpu-runner/engine/preview.ts";
import { PreviewReduction, previewShare } from "../../gpu-runner/engine/preview-reduction.ts";
import { readPreviewHeader, tileRange } from "../../schema/preview-tiles.ts";

function pattern(width: number, height: number, channels: number): DecodedImage {
  const data = new Float32Array(width * height * channels);
  for (let c = 0; c < channels; c++)
    for (let y = 0; y < height; y++)
      for (let x = 0; x < width; x++)
        data[(c * height + y) * width + x] = 300 + 2000 * (Math.sin(x / (37 + c)) * Math.cos(y / 23) > 0.6 ? 1 : 0) + ((x * 7 + y * 13) % 50);
  return { width, height, channels, bitDepth: 16, sampleFormat: "uint", data };
}

/** The preview summed from the image cut into parts of about `side` pixels, each added once. */
function inParts(image: DecodedImage, side: number): Uint8Array {
  const reduction = new PreviewReduction(image.width, image.height, image.channels);
  const all = Array.from({ length: image.channels }, (_, c) => c);
  for (const { core } of blockGrid(image.width, image.height, side, 0).blocks) {
    const part = cutRegion(image, core.x, core.y, core.width, core.height, all);
    reduction.add(part, { x: core.x, y: core.y, from: { x: 0, y: 0, width: core.width, height: core.height } });
  }
  return reduction.tiles();
}

function largestTileDifference(a: Uint8Array, b: Uint8Array): number {
  const first = readPreviewHeader(a);
  const second = readPreviewHeader(b);
  let largest = 0;
  first.index.levels.forEach((level, l) => {
    for (let row = 0; row < level.rows; row++)
      for (let column = 0; column < level.columns; column++) {
        const ra = tileRange(first.index, first.dataStart, l, column, row)!;
        const rb = tileRange(second.index, second.dataStart, l, column, row)!;
        const ta = decodePng(a.subarray(ra.offset, ra.offset + ra.length)).data;
        const tb = decodePng(b.subarray(rb.offset, rb.offset + rb.length)).data;
        for (let i = 0; i < ta.length; i++) largest = Math.max(largest, Math.abs(ta[i]! - tb[i]!));
      }
  });
  return largest;
}

describe("a preview summed from parts", () => {
  it("is the whole image's preview, byte for byte, when the finest level is full resolution", () => {
    const image = pattern(1300, 900, 2);
    expect(inParts(image, 300)).toEqual(previewTiles(image));
  });

  it("has the whole image's pyramid within one grey level when the finest level is reduced", () => {
    // 8200 x 2100 is above 4096² pixels: the finest level is halved, and parts of 1000 px cut its boxes.
    const image = pattern(8200, 2100, 1);
    const whole = previewTiles(image);
    const summed = inParts(image, 1000);
    const { index } = readPreviewHeader(summed);
    const expected = readPreviewHeader(whole).index;
    expect([index.width, index.height, index.tile]).toEqual([8200, 2100, 512]);
    const geometry = (levels: typeof index.levels) => levels.map((l) => [l.factor, l.width, l.height, l.columns, l.rows]);
    expect(geometry(index.levels)).toEqual(geometry(expected.levels));
    expect(index.levels[0]!.factor).toBe(2);
    expect(largestTileDifference(whole, summed)).toBeLessThanOrEqual(1);
  });

  it("is the same when each block gives its share elsewhere and the shares are added (a fanned-out prediction's merge)", () => {
    // Blocks read with margins, their cores cutting the finest level's boxes (factor 2 here).
    const image = pattern(8200, 2100, 1);
    const all = [0];
    const reduction = new PreviewReduction(image.width, image.height, image.channels);
    for (const { core, read } of blockGrid(image.width, image.height, 1000, 37).blocks) {
      const region = cutRegion(image, read.x, read.y, read.width, read.height, all);
      const from = { x: core.x - read.x, y: core.y - read.y, width: core.width, height: core.height };
      reduction.addShare(previewShare(image.width, image.height, region, { x: read.x, y: read.y, from }));
    }
    expect(largestTileDifference(reduction.tiles(), inParts(image, 1000))).toBe(0);
  }, 60_000);

  it("is the same, within a grey level, when its parts come from the file's own half-size level (a slide's pyramid)", () => {
    const image = pattern(8200, 2100, 1);
    // The level as a scanner writes it: each pixel the mean of 2 x 2.
    const level: DecodedImage = { ...image, width: 4100, height: 1050, data: new Float32Array(4100 * 1050) };
    for (let y = 0; y < 1050; y++)
      for (let x = 0; x < 4100; x++) {
        const at = 2 * y * 8200 + 2 * x;
        level.data[y * 4100 + x] = (image.data[at]! + image.data[at + 1]! + image.data[at + 8200]! + image.data[at + 8201]!) / 4;
      }
    const reduction = new PreviewReduction(image.width, image.height, 1, level);
    for (const { core } of blockGrid(level.width, level.height, 700, 0).blocks) {
      const part = cutRegion(level, core.x, core.y, core.width, core.height, [0]);
      reduction.add(part, { x: core.x, y: core.y, from: { x: 0, y: 0, width: core.width, height: core.height } });
    }
    const fromLevel = reduction.tiles();
    expect(readPreviewHeader(fromLevel).index.levels.map((l) => l.factor)).toEqual(readPreviewHeader(inParts(image, 1000)).index.levels.map((l) => l.factor));
    expect(largestTileDifference(fromLevel, inParts(image, 1000))).toBeLessThanOrEqual(1);
  }, 60_000);

  it("refuses a share that does not fit its preview", () => {
    const image = pattern(600, 400, 1);
    const share = previewShare(1200, 800, image, { x: 600, y: 400, from: { x: 0, y: 0, width: 600, height: 400 } });
    expect(() => new PreviewReduction(600, 400, 1).addShare(share)).toThrow(/does not fit this preview/);
  });
});
