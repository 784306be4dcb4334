import { encode } from "fast-png";
import { describe, expect, it } from "vitest";
import { decodeImage, ImageDecodeError, probeImage } from "../../../common/decode/index.ts";
import { interlacedGrayPng } from "../../fixtures/hostile-images.ts";

const width = 13;
const height = 7;

function samples(channels: number, max: number): number[] {
  return Array.from({ length: width * height * channels }, (_, i) => (i * 2_654_435_761) % (max + 1));
}

function toPlanar(values: number[], channels: number): Float32Array {
  const out = new Float32Array(values.length);
  const plane = width * height;
  for (let i = 0; i < plane; i++) for (let c = 0; c < channels; c++) out[c * plane + i] = values[i * channels + c]!;
  return out;
}

describe("PNG decoding", () => {
  for (const depth of [8, 16] as const) {
    for (const stored of [1, 2, 3, 4]) {
      // Gray + alpha (2 samples) and RGBA (4): alpha is not a channel, so they decode as gray and RGB.
      const channels = stored === 2 || stored === 4 ? stored - 1 : stored;
      it(`reads ${depth}-bit images of ${stored} sample(s) a pixel into ${channels} planar channel(s)${channels < stored ? ", alpha dropped" : ""}`, () => {
        const values = samples(stored, depth === 8 ? 255 : 65535);
        const data = depth === 8 ? Uint8Array.from(values) : Uint16Array.from(values);
        const image = decodeImage(encode({ width, height, data, depth, channels: stored }));
        expect(image).toMatchObject({ width, height, channels, bitDepth: depth, sampleFormat: "uint" });
        const withoutAlpha = values.filter((_, i) => channels === stored || i % stored !== stored - 1);
        expect(image.data).toEqual(toPlanar(withoutAlpha, channels));
        expect(probeImage(encode({ width, height, data, depth, channels: stored })).channels).toBe(channels);
      });
    }
  }

  it("reads a 16-bit label image exactly, ids up to 65535", () => {
    const labels = Uint16Array.from({ length: width * height }, (_, i) => (i % 5 === 0 ? 0 : 65535 - i));
    const image = decodeImage(encode({ width, height, data: labels, depth: 16, channels: 1 }));
    expect(Array.from(image.data)).toEqual(Array.from(labels));
  });

  it("expands 1-bit gray and palette images", () => {
    const bits = encode({ width: 3, height: 2, data: new Uint8Array([0b1010_0000, 0b0110_0000]), depth: 1, channels: 1 });
    expect(Array.from(decodeImage(bits).data)).toEqual([1, 0, 1, 0, 1, 1]);
    const palette = encode({
      width: 2,
      height: 1,
      data: new Uint8Array([1, 0]),
      depth: 8,
      channels: 1,
      palette: [
        [10, 20, 30],
        [40, 50, 60],
      ],
    });
    const rgb = decodeImage(palette);
    expect(rgb.channels).toBe(3);
    expect(Array.from(rgb.data)).toEqual([40, 10, 50, 20, 60, 30]);
  });

  it("decodes an Adam7-interlaced PNG", () => {
    const value = (x: number, y: number) => (x * 7 + y * 13) % 256;
    const image = decodeImage(interlacedGrayPng(13, 11, value));
    expect(image).toMatchObject({ width: 13, height: 11, channels: 1 });
    expect(Array.from(image.data)).toEqual(Array.from({ length: 13 * 11 }, (_, i) => value(i % 13, Math.floor(i / 13))));
  });

  it("decodes a palette image with transparency (tRNS) to its RGB, as the probe counts it", () => {
    const palette = encode({
      width: 2,
      height: 1,
      data: new Uint8Array([1, 0]),
      depth: 8,
      channels: 1,
      palette: [
        [10, 20, 30, 0],
        [40, 50, 60, 255],
      ],
    });
    const rgb = decodeImage(palette);
    expect(probeImage(palette).channels).toBe(3);
    expect(rgb.channels).toBe(3);
    expect(Array.from(rgb.data)).toEqual([40, 10, 50, 20, 60, 30]);
  });

  it("probes the header without decoding", () => {
    const png = encode({ width, height, data: new Uint16Array(width * height * 3), depth: 16, channels: 3 });
    expect(probeImage(png)).toEqual({
      format: "png",
      width,
      height,
      channels: 3,
      bitDepth: 16,
      sampleFormat: "uint",
      pages: 1,
      lossy: false,
      pixelSize: null, // nor does a PNG
      pixelSizeWarning: null,
      channelNames: null,
      formatName: "PNG",
      levels: [],
      objectiveMagnification: null,
    });
  });

  it("reports truncated and corrupt files", () => {
    const png = encode({ width, height, data: Uint8Array.from(samples(1, 255)), depth: 8, channels: 1 });
    for (const cut of [8, 20, 40, png.length - 20]) expect(() => decodeImage(png.subarray(0, cut))).toThrow(ImageDecodeError);
    const corrupt = png.slice();
    corrupt.fill(0x55, 41, 60);
    expect(() => decodeImage(corrupt)).toThrow(ImageDecodeError);
  });

  it("rejects a header declaring an enormous image before decoding", () => {
    const png = encode({ width: 1, height: 1, data: new Uint8Array(1), depth: 8, channels: 1 });
    new DataView(png.buffer, png.byteOffset).setUint32(16, 100_000);
    new DataView(png.buffer, png.byteOffset).setUint32(20, 100_000);
    expect(() => decodeImage(png)).toThrow(/too large/);
  });
});
