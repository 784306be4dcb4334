import { decode } from "fast-png";
import { describe, expect, it } from "vitest";
import { decodeImage } from "../../gpu-runner/engine/decode/index.ts";
import { encodeLabelPng } from "../../gpu-runner/engine/outputs/label-png.ts";
import { discField } from "./helpers/synthetic-labels.ts";

describe("label PNG", () => {
  it("holds every label exactly, as a 16-bit grayscale PNG that other decoders read (CRCs checked)", () => {
    const scene = discField(301, 177, 40, 4, 12, 2); // odd sizes: rows are not a round number of bytes
    const labels = scene.labels.slice();
    labels[0] = 65_535; // the largest label a 16-bit PNG holds
    labels[1] = 256; // high and low bytes both matter
    const png = encodeLabelPng(labels, 301, 177);
    const read = decode(png, { checkCrc: true });
    expect(read).toMatchObject({ width: 301, height: 177, depth: 16, channels: 1 });
    expect(Uint32Array.from(read.data)).toEqual(labels);
    const engine = decodeImage(png);
    expect(engine).toMatchObject({ width: 301, height: 177, channels: 1, bitDepth: 16 });
    expect(Uint32Array.from(engine.data)).toEqual(labels);
  });

  it("refuses labels a 16-bit PNG cannot hold", () => {
    const labels = new Uint32Array(4);
    labels[3] = 65_536;
    expect(() => encodeLabelPng(labels, 2, 2)).toThrow(/more than 65535 masks/);
  });
});
