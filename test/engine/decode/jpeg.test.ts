import jpeg from "jpeg-js";
import { describe, expect, it } from "vitest";
import { decodeImage, ImageDecodeError, probeImage } from "../../../common/decode/index.ts";

const width = 32;
const height = 24;

function smoothRgba(): Uint8Array {
  const rgba = new Uint8Array(width * height * 4);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 4;
      rgba.set([x * 6, y * 8, 128, 255], i);
    }
  }
  return rgba;
}

describe("JPEG decoding", () => {
  it("reads a colour JPEG as three planar channels close to the encoded pixels", () => {
    const rgba = smoothRgba();
    const file = jpeg.encode({ width, height, data: rgba }, 95).data;
    const image = decodeImage(file);
    expect(image).toMatchObject({ width, height, channels: 3, bitDepth: 8, sampleFormat: "uint" });
    let worst = 0;
    for (let c = 0; c < 3; c++) {
      for (let i = 0; i < width * height; i++) worst = Math.max(worst, Math.abs(image.data[c * width * height + i]! - rgba[i * 4 + c]!));
    }
    expect(worst).toBeLessThan(12); // lossy at quality 95
  });

  it("probes the frame header", () => {
    const file = jpeg.encode({ width, height, data: smoothRgba() }, 80).data;
    expect(probeImage(file)).toEqual({
      format: "jpeg",
      width,
      height,
      channels: 3,
      bitDepth: 8,
      sampleFormat: "uint",
      pages: 1,
      lossy: true,
      pixelSize: null, // a JPEG carries no calibration the service reads
      pixelSizeWarning: null,
      channelNames: null,
      formatName: "JPEG",
      levels: [],
      objectiveMagnification: null,
    });
  });

  it("reports truncated and corrupt files", () => {
    const file = jpeg.encode({ width, height, data: smoothRgba() }, 80).data;
    expect(() => decodeImage(file.subarray(0, 30))).toThrow(ImageDecodeError);
    const corrupt = file.slice();
    corrupt[2] = 0x00;
    expect(() => decodeImage(corrupt)).toThrow(ImageDecodeError);
  });
});

describe("format detection", () => {
  it("rejects empty and unknown files with a clear error", () => {
    expect(() => decodeImage(new Uint8Array(0))).toThrow(/empty file/);
    expect(() => decodeImage(new TextEncoder().encode("GIF89a......"))).toThrow(/unrecognised image format/);
  });
});
