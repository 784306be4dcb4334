// The preview tiles' PNG encoder, checked by decoding what it writes with fast-png's decoder, which
// checks every chunk's CRC and inflates with pako: a decoder other than the zlib that deflated.
import { decode as decodePng } from "fast-png";
import { describe, expect, it } from "vitest";
import { encodePng8 } from "../../gpu-runner/engine/png-encode.ts";

function noise(length: number, seed: number): Uint8Array {
  const bytes = new Uint8Array(length);
  for (let i = 0; i < length; i++) bytes[i] = (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 24;
  return bytes;
}

describe("encodePng8", () => {
  it("writes gray pixels that decode to the same bytes, at any width, one pixel wide included", () => {
    for (const [width, height] of [
      [512, 512],
      [1, 7],
      [37, 1],
      [300, 113],
    ] as const) {
      const data = noise(width * height, width * 31 + height);
      const decoded = decodePng(encodePng8(data, width, height, 1));
      expect([decoded.width, decoded.height, decoded.channels, decoded.depth]).toEqual([width, height, 1, 8]);
      expect(Buffer.from(decoded.data as Uint8Array).equals(Buffer.from(data))).toBe(true);
    }
  });

  it("writes RGB pixels, each channel filtered against its own left neighbour", () => {
    const [width, height] = [129, 64];
    const data = new Uint8Array(width * height * 3);
    for (let i = 0; i < width * height; i++) data.set([i & 0xff, (i * 7) & 0xff, 255 - (i & 0xff)], i * 3);
    const decoded = decodePng(encodePng8(data, width, height, 3));
    expect([decoded.width, decoded.height, decoded.channels]).toEqual([width, height, 3]);
    expect(Buffer.from(decoded.data as Uint8Array).equals(Buffer.from(data))).toBe(true);
  });

  it("compresses a smooth gradient to a small fraction of its bytes", () => {
    const [width, height] = [512, 512];
    const data = Uint8Array.from({ length: width * height }, (_, i) => ((i % width) + Math.floor(i / width)) >> 2);
    expect(encodePng8(data, width, height, 1).length).toBeLessThan(width * height * 0.05);
  });

  it("refuses pixels that do not fill the size given", () => {
    expect(() => encodePng8(new Uint8Array(10), 4, 4, 1)).toThrow("10 bytes for a 4x4 image of 1 channel(s)");
  });
});
