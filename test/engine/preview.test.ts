// The viewer's preview: contrast-stretched to 8 bits, shrunk to at most 2048 px on its long side.
import { decode as decodePng } from "fast-png";
import { describe, expect, it } from "vitest";
import { PREVIEW_MAX_SIDE, previewPng } from "../../gpu-runner/engine/preview.ts";

function image(width: number, height: number, channels: number, value: (c: number, x: number, y: number) => number) {
  const data = new Float32Array(width * height * channels);
  for (let c = 0; c < channels; c++) for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) data[(c * height + y) * width + x] = value(c, x, y);
  return { width, height, channels, bitDepth: 16, sampleFormat: "uint" as const, data };
}

describe("previewPng", () => {
  it("stretches a dim 16-bit image so nuclei are white and background black", () => {
    // Background 300, a bright square of 3000 in the middle: shown linearly both would be near black.
    const dim = image(400, 300, 1, (_c, x, y) => (x >= 150 && x < 250 && y >= 100 && y < 200 ? 3000 : 300 + ((x + y) % 3)));
    const { png, width, height } = previewPng(dim);
    expect([width, height]).toEqual([400, 300]);
    const decoded = decodePng(png);
    expect(decoded).toMatchObject({ width: 400, height: 300, channels: 1, depth: 8 });
    expect(decoded.data[150 * 400 + 200]).toBe(255);
    expect(decoded.data[10 * 400 + 10]).toBeLessThan(10);
  });

  it("shrinks a large image to the bound, keeping its aspect", () => {
    const wide = image(PREVIEW_MAX_SIDE * 2 + 10, 500, 1, (_c, x) => x);
    const { png, width, height } = previewPng(wide);
    expect(width).toBeLessThanOrEqual(PREVIEW_MAX_SIDE);
    expect(height).toBe(Math.ceil(500 / 3));
    expect(decodePng(png).width).toBe(width);
  });

  it("shows two channels as a magenta/green composite and three as RGB", () => {
    const two = decodePng(previewPng(image(8, 8, 2, (c, x) => (c === 0 ? x : 7 - x))).png);
    expect(two.channels).toBe(3);
    const right = 3 * 7; // x = 7, y = 0: channel 0 bright, channel 1 dark
    expect([two.data[right], two.data[right + 1], two.data[right + 2]]).toEqual([255, 0, 255]);
    const three = decodePng(previewPng(image(8, 8, 4, (c) => c * 10 + 1)).png);
    expect(three.channels).toBe(3);
  });
});
