import { describe, expect, it } from "vitest";
import { percentiles } from "../../common/percentiles.ts";
import { normalizeImage } from "../../gpu-runner/engine/normalize.ts";

describe("percentile normalisation (Cellpose's normalize99)", () => {
  it("computes percentiles as numpy does, with linear interpolation", () => {
    const values = Float32Array.from({ length: 101 }, (_, i) => 100 - i); // 0..100, unsorted
    expect(percentiles(values, [1, 99, 50])).toEqual([1, 99, 50]);
    // np.percentile([0, 10, 20, 30], 25) = 7.5
    expect(percentiles(Float32Array.from([30, 0, 20, 10]), [25])).toEqual([7.5]);
  });

  it("gives the same percentiles for integer and fractional data paths", () => {
    const ints = Float32Array.from({ length: 1000 }, (_, i) => (i * 7919) % 4096);
    const shifted = ints.map((v) => v + 0.5);
    const [a, b] = percentiles(ints, [1, 99]);
    const [c, d] = percentiles(shifted, [1, 99]);
    expect([c! - 0.5, d! - 0.5]).toEqual([a, b]);
  });

  it("maps each channel's 1st and 99th percentiles to 0 and 1 independently", () => {
    const plane = 101;
    const data = new Float32Array(2 * plane);
    for (let i = 0; i < plane; i++) {
      data[i] = i;
      data[plane + i] = 1000 + 10 * i;
    }
    const out = normalizeImage({ width: plane, height: 1, channels: 2, bitDepth: 16, sampleFormat: "uint", data });
    expect([out[1], out[99], out[plane + 1], out[plane + 99]]).toEqual([0, 1, 0, 1]);
    expect(out[50]).toBeCloseTo(49 / 98, 6);
  });

  it("turns a flat channel into zeros rather than dividing by zero", () => {
    const out = normalizeImage({ width: 4, height: 1, channels: 1, bitDepth: 8, sampleFormat: "uint", data: Float32Array.from([7, 7, 7, 7]) });
    expect(Array.from(out)).toEqual([0, 0, 0, 0]);
  });

  it("can normalise in place", () => {
    const data = Float32Array.from({ length: 101 }, (_, i) => i);
    const out = normalizeImage({ width: 101, height: 1, channels: 1, bitDepth: 8, sampleFormat: "uint", data }, { lower: 0, upper: 100 }, data);
    expect(out).toBe(data);
    expect(data[100]).toBe(1);
  });
});
