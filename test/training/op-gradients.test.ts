// Every differentiable op's hand-derived backward pass against finite differences.
import { describe, expect, it } from "vitest";
import { add } from "../../gpu-runner/network/ops/add.ts";
import { conv2d } from "../../gpu-runner/network/ops/conv2d.ts";
import { flowLoss } from "../../gpu-runner/network/ops/flow-loss.ts";
import { relu } from "../../gpu-runner/network/ops/relu.ts";
import { averagePool2x, upsample2x } from "../../gpu-runner/network/ops/resample.ts";
import { compareGradients, randomData, relativeError } from "./gradient-check.ts";

const TOLERANCE = 2e-3;

async function expectGradientsToMatch(...args: Parameters<typeof compareGradients>) {
  const comparisons = await compareGradients(...args);
  expect(comparisons.length).toBeGreaterThan(0);
  for (const c of comparisons) {
    expect(
      c.analytic.some((v) => v !== 0),
      `${c.input} has a non-zero gradient`,
    ).toBe(true);
    expect(relativeError(c), `${c.input}: analytic ${c.analytic} vs numeric ${c.numeric}`).toBeLessThan(TOLERANCE);
  }
}

describe("backward passes agree with finite differences", () => {
  it("3x3 convolution: input, weight and bias", async () => {
    await expectGradientsToMatch(
      [
        { name: "x", shape: [2, 3, 6, 5], differentiable: true },
        { name: "w", shape: [4, 3, 3, 3], differentiable: true },
        { name: "b", shape: [4], differentiable: true },
      ],
      (tape) => conv2d(tape, "x", "w", "b", 3, 3, 4),
      [2, 4, 6, 5],
    );
  });

  it("1x1 convolution: input, weight and bias", async () => {
    await expectGradientsToMatch(
      [
        { name: "x", shape: [2, 4, 4, 4], differentiable: true },
        { name: "w", shape: [3, 4, 1, 1], differentiable: true },
        { name: "b", shape: [3], differentiable: true },
      ],
      (tape) => conv2d(tape, "x", "w", "b", 1, 4, 3),
      [2, 3, 4, 4],
    );
  });

  it("ReLU (inputs kept away from the kink at 0)", async () => {
    const x = randomData(2 * 2 * 4 * 4, 5).map((v) => (v >= 0 ? v + 0.1 : v - 0.1));
    await expectGradientsToMatch([{ name: "x", shape: [2, 2, 4, 4], data: x, differentiable: true }], (tape) => relu(tape, "x"), [2, 2, 4, 4]);
  });

  it("2x2 average pooling", async () => {
    await expectGradientsToMatch([{ name: "x", shape: [1, 2, 6, 8], differentiable: true }], (tape) => averagePool2x(tape, "x"), [1, 2, 3, 4]);
  });

  it("2x nearest upsampling", async () => {
    await expectGradientsToMatch([{ name: "x", shape: [1, 2, 3, 4], differentiable: true }], (tape) => upsample2x(tape, "x"), [1, 2, 6, 8]);
  });

  it("addition, each operand", async () => {
    await expectGradientsToMatch(
      [
        { name: "a", shape: [1, 2, 3, 3], differentiable: true },
        { name: "b", shape: [1, 2, 3, 3], differentiable: true },
      ],
      (tape) => add(tape, "a", "b"),
      [1, 2, 3, 3],
    );
  });

  it("Cellpose loss (flow MSE + cell-probability BCE) with respect to the prediction", async () => {
    const target = randomData(2 * 3 * 4 * 4, 11);
    for (let i = 2 * 16; i < 3 * 16; i++) target[i] = target[i]! > 0 ? 1 : 0; // image 0's mask channel
    for (let i = 5 * 16; i < 6 * 16; i++) target[i] = target[i]! > 0 ? 1 : 0; // image 1's mask channel
    await expectGradientsToMatch(
      [
        { name: "prediction", shape: [2, 3, 4, 4], data: randomData(2 * 3 * 4 * 4, 12, -4, 4), differentiable: true },
        { name: "target", shape: [2, 3, 4, 4], data: target, differentiable: false },
      ],
      (tape) => flowLoss(tape, "prediction", "target"),
      "scalar",
      { epsilon: 1e-2, samples: 96 },
    );
  });
});
