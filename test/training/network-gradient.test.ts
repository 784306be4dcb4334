// The whole train-step graph: its gradient is the derivative of its loss, and its forward pass is
// exactly the inference graph the engine serves.
import * as ort from "onnxruntime-node";
import { describe, expect, it } from "vitest";
import { buildInferenceModel, INFERENCE_INPUT, INFERENCE_OUTPUT } from "../../gpu-runner/network/inference-model.ts";
import { parameterLayout } from "../../gpu-runner/network/parameter-layout.ts";
import { buildGradientModel, TrainStepNames } from "../../gpu-runner/network/train-step-model.ts";
import { initialParameters } from "../../gpu-runner/training/initial-parameters.ts";
import { SeededRandom } from "../../gpu-runner/training/random.ts";
import { syntheticBatch, TINY_NETWORK } from "./tiny-network.ts";

const layout = parameterLayout(TINY_NETWORK);
const batch = syntheticBatch(2, TINY_NETWORK.inputChannels, 8);

async function gradientSession() {
  return ort.InferenceSession.create(buildGradientModel(TINY_NETWORK));
}

function feeds(params: Float32Array) {
  return {
    [TrainStepNames.images]: batch.images,
    [TrainStepNames.targets]: batch.targets,
    [TrainStepNames.params]: new ort.Tensor("float32", params, [params.length]),
  };
}

describe("the whole network's gradient", () => {
  it("matches central finite differences of the loss for every parameter tensor", async () => {
    const session = await gradientSession();
    const params = initialParameters(layout, 3);
    for (const [i, p] of params.entries()) if (p === 0) params[i] = 0.05; // biases too
    // The session's outputs are the names in TrainStepNames.
    const analytic = (await session.run(feeds(params)))[TrainStepNames.gradient]!.data as Float32Array;
    const lossAt = async (p: Float32Array) => (await session.run(feeds(p)))[TrainStepNames.loss]!.data[0] as number;
    const random = new SeededRandom(5);
    const epsilon = 1e-3;
    let checked = 0;
    for (const slot of layout.slots) {
      let slotScale = 0;
      const pairs: [number, number][] = [];
      for (let s = 0; s < 3; s++) {
        // Inside the slot, so inside params and its gradient.
        const index = slot.offset + random.below(slot.size);
        const original = params[index]!;
        params[index] = original + epsilon;
        const plus = await lossAt(params);
        params[index] = original - epsilon;
        const minus = await lossAt(params);
        params[index] = original;
        const numeric = (plus - minus) / (2 * epsilon);
        const a = analytic[index]!;
        pairs.push([a, numeric]);
        slotScale = Math.max(slotScale, Math.abs(numeric), Math.abs(a));
      }
      for (const [a, n] of pairs) {
        expect(Math.abs(a - n), `${slot.name}: analytic ${a} vs numeric ${n}`).toBeLessThan(2e-2 * slotScale + 2e-4);
        checked++;
      }
    }
    expect(checked).toBe(3 * layout.slots.length);
  });

  it("comes with a forward pass equal (to float rounding) to the inference graph's output", async () => {
    const params = initialParameters(layout, 4);
    const trainForward = (await (await gradientSession()).run(feeds(params)))[TrainStepNames.prediction]!;
    const inference = await ort.InferenceSession.create(buildInferenceModel(TINY_NETWORK, params));
    const served = (await inference.run({ [INFERENCE_INPUT]: batch.images }))[INFERENCE_OUTPUT]!;
    expect(served.dims).toEqual([2, 3, 8, 8]);
    // Equal up to float rounding: onnxruntime fuses constant-weight convolutions differently.
    const a = served.data as Float32Array,
      b = trainForward.data as Float32Array;
    let largestDifference = 0;
    // Both are the prediction of the same batch, of the same shape.
    for (const [i, x] of a.entries()) largestDifference = Math.max(largestDifference, Math.abs(x - b[i]!));
    expect(largestDifference).toBeLessThan(1e-5);
    expect(a.some((v) => v !== 0)).toBe(true);
  });
});
