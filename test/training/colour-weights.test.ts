// A colour network started from a one-channel network computes what that network did on a gray
// image repeated in its three channels: training starts from what the one-channel model knows.
import { describe, expect, it } from "vitest";
import { expandToColour } from "../../gpu-runner/network/colour-weights.ts";
import { buildInferenceModel } from "../../gpu-runner/network/inference-model.ts";
import { parameterLayout } from "../../gpu-runner/network/parameter-layout.ts";
import { initialParameters } from "../../gpu-runner/training/initial-parameters.ts";
import { randomData } from "./gradient-check.ts";
import { runInference } from "./run-inference.ts";

describe("a colour network started from a one-channel network", () => {
  const gray = { inputChannels: 1, widths: [6, 8, 10] };
  const params = initialParameters(parameterLayout(gray), 3);

  it("gives the one-channel network's output on a gray image repeated in all three channels", async () => {
    const colour = expandToColour(gray, params);
    expect(colour.network).toEqual({ inputChannels: 3, widths: [6, 8, 10] });
    expect(colour.params.length).toBe(parameterLayout(colour.network).totalSize);
    const size = 32;
    const image = randomData(size * size, 11, 0, 1);
    const expected = await runInference(buildInferenceModel(gray, params), image, 1, size);
    const actual = await runInference(buildInferenceModel(colour.network, colour.params), new Float32Array([...image, ...image, ...image]), 3, size);
    let largest = 0,
      difference = 0;
    for (let i = 0; i < expected.length; i++) {
      largest = Math.max(largest, Math.abs(expected[i]!));
      difference = Math.max(difference, Math.abs(expected[i]! - actual[i]!));
    }
    expect(largest).toBeGreaterThan(0.01); // the network's output is not trivially zero
    expect(difference).toBeLessThan(1e-5 * Math.max(1, largest));
  });

  it("copies every weight but the first convolution's, which it divides by 3 per channel", () => {
    const colour = expandToColour(gray, params);
    const before = new Map(parameterLayout(gray).slots.map((s) => [s.name, params.subarray(s.offset, s.offset + s.size)]));
    for (const slot of parameterLayout(colour.network).slots) {
      const weights = colour.params.subarray(slot.offset, slot.offset + slot.size);
      if (slot.name === "down0.conv0.weight") {
        expect(slot.shape).toEqual([6, 3, 3, 3]);
        const one = before.get(slot.name)!;
        for (let f = 0; f < 6; f++)
          for (let c = 0; c < 3; c++) for (let k = 0; k < 9; k++) expect(weights[(f * 3 + c) * 9 + k]).toBe(Math.fround(one[f * 9 + k]! / 3));
      } else expect(weights, slot.name).toEqual(before.get(slot.name));
    }
  });

  it("refuses a network that is not one-channel", () => {
    const colour = expandToColour(gray, params);
    expect(() => expandToColour(colour.network, colour.params)).toThrow(/only a one-channel network/);
  });
});
