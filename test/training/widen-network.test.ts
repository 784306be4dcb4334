// A wider network started from a narrower one computes what the narrow one did (Net2WiderNet), so a
// larger model's training starts from what the smaller model knows.
import { describe, expect, it } from "vitest";
import { buildInferenceModel } from "../../gpu-runner/network/inference-model.ts";
import { parameterLayout } from "../../gpu-runner/network/parameter-layout.ts";
import { widenNetwork } from "../../gpu-runner/network/widen-network.ts";
import { initialParameters } from "../../gpu-runner/training/initial-parameters.ts";
import { SeededRandom } from "../../gpu-runner/training/random.ts";
import { randomData } from "./gradient-check.ts";
import { runInference } from "./run-inference.ts";

function largestDifference(a: Float32Array, b: Float32Array): { largest: number; difference: number } {
  let largest = 0,
    difference = 0;
  for (let i = 0; i < a.length; i++) {
    largest = Math.max(largest, Math.abs(a[i]!));
    difference = Math.max(difference, Math.abs(a[i]! - b[i]!));
  }
  return { largest, difference };
}

describe("a network widened from a narrower one", () => {
  const narrow = { inputChannels: 3, widths: [6, 8, 10] };
  const params = initialParameters(parameterLayout(narrow), 5);
  const size = 32;
  const image = randomData(3 * size * size, 17, 0, 1);

  it("computes the narrow network's output when the copies get no noise", async () => {
    const random = new SeededRandom(1);
    const wide = widenNetwork(narrow, params, [12, 16, 20], { random: () => random.next(), noise: 0 });
    expect(wide.network).toEqual({ inputChannels: 3, widths: [12, 16, 20] });
    expect(wide.params.length).toBe(parameterLayout(wide.network).totalSize);
    const expected = await runInference(buildInferenceModel(narrow, params), image, 3, size);
    const actual = await runInference(buildInferenceModel(wide.network, wide.params), image, 3, size);
    const { largest, difference } = largestDifference(expected, actual);
    expect(largest).toBeGreaterThan(0.01);
    expect(difference).toBeLessThan(1e-5 * Math.max(1, largest));
  });

  it("copies channels drawn at random, each level by its own width", async () => {
    const random = new SeededRandom(2);
    const wide = widenNetwork(narrow, params, [9, 8, 17], { random: () => random.next(), noise: 0 });
    const expected = await runInference(buildInferenceModel(narrow, params), image, 3, size);
    const actual = await runInference(buildInferenceModel(wide.network, wide.params), image, 3, size);
    const { largest, difference } = largestDifference(expected, actual);
    expect(difference).toBeLessThan(1e-5 * Math.max(1, largest));
  });

  it("breaks the copies' symmetry with noise, staying close to the narrow network", async () => {
    const random = new SeededRandom(3);
    const wide = widenNetwork(narrow, params, [12, 16, 20], { random: () => random.next(), noise: 0.01 });
    const slot = parameterLayout(wide.network).slots.find((s) => s.name === "down0.conv1.weight")!;
    const kernel = (channel: number) => wide.params.subarray(slot.offset + channel * 12 * 9, slot.offset + (channel + 1) * 12 * 9);
    for (let copy = 6; copy < 12; copy++) for (let original = 0; original < 6; original++) expect(kernel(copy)).not.toEqual(kernel(original));
    const expected = await runInference(buildInferenceModel(narrow, params), image, 3, size);
    const actual = await runInference(buildInferenceModel(wide.network, wide.params), image, 3, size);
    const { largest, difference } = largestDifference(expected, actual);
    expect(difference).toBeGreaterThan(0);
    expect(difference).toBeLessThan(0.1 * largest);
  });

  it("refuses fewer levels or a narrower level", () => {
    const options = { random: Math.random, noise: 0 };
    expect(() => widenNetwork(narrow, params, [12, 16], options)).toThrow(/keeps the number of levels/);
    expect(() => widenNetwork(narrow, params, [12, 6, 20], options)).toThrow(/at least as wide/);
  });
});
