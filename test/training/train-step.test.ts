// The train-step graph updates weights by AdamW and, repeated, fits a small problem.
// The models' outputs are the names in TrainStepNames, so `out[N.…]!` is always there.
import * as ort from "onnxruntime-node";
import { describe, expect, it } from "vitest";
import { DEFAULT_ADAMW } from "../../gpu-runner/network/adamw.ts";
import { parameterLayout } from "../../gpu-runner/network/parameter-layout.ts";
import { buildGradientModel, buildTrainStepModel, TrainStepNames as N } from "../../gpu-runner/network/train-step-model.ts";
import { initialParameters } from "../../gpu-runner/training/initial-parameters.ts";
import { syntheticBatch, TINY_NETWORK } from "./tiny-network.ts";

const layout = parameterLayout(TINY_NETWORK);
const vector = (data: Float32Array) => new ort.Tensor("float32", data, [data.length]);
const scalar = (value: number) => new ort.Tensor("float32", Float32Array.of(value), []);

describe("the train step", () => {
  it("applies AdamW with bias correction and decoupled weight decay to the graph's own gradient", async () => {
    const batch = syntheticBatch(2, TINY_NETWORK.inputChannels, 8);
    const params = initialParameters(layout, 8);
    const m = Float32Array.from(params, (_, i) => ((i % 7) - 3) * 1e-3);
    const v = Float32Array.from(params, (_, i) => ((i % 5) + 1) * 1e-4);
    const step = 3,
      learningRate = 0.01;
    const gradientSession = await ort.InferenceSession.create(buildGradientModel(TINY_NETWORK));
    const gradient = (
      (await gradientSession.run({ images: batch.images, targets: batch.targets, params: vector(params) }))[N.gradient]!.data as Float32Array
    ).slice();

    const stepSession = await ort.InferenceSession.create(buildTrainStepModel(TINY_NETWORK, DEFAULT_ADAMW));
    const out = await stepSession.run({
      [N.images]: batch.images,
      [N.targets]: batch.targets,
      [N.params]: vector(params),
      [N.firstMoment]: vector(m),
      [N.secondMoment]: vector(v),
      [N.step]: scalar(step),
      [N.learningRate]: scalar(learningRate),
    });
    const { beta1, beta2, epsilon, weightDecay } = DEFAULT_ADAMW;
    const newParams = out[N.newParams]!.data as Float32Array;
    const newM = out[N.newFirstMoment]!.data as Float32Array;
    const newV = out[N.newSecondMoment]!.data as Float32Array;
    for (const [i, param] of params.entries()) {
      // m, v and the gradient have one value per parameter.
      const g = gradient[i]!;
      const expectedM = beta1 * m[i]! + (1 - beta1) * g;
      const expectedV = beta2 * v[i]! + (1 - beta2) * g * g;
      const update = expectedM / (1 - beta1 ** step) / (Math.sqrt(expectedV / (1 - beta2 ** step)) + epsilon) + weightDecay * param;
      expect(newM[i]).toBeCloseTo(expectedM, 6);
      expect(newV[i]).toBeCloseTo(expectedV, 8);
      expect(newParams[i]).toBeCloseTo(param - learningRate * update, 5);
    }
  });

  it("lowers the loss over a short run on a fixed batch", async () => {
    const batch = syntheticBatch(4, TINY_NETWORK.inputChannels, 16);
    const session = await ort.InferenceSession.create(buildTrainStepModel(TINY_NETWORK, DEFAULT_ADAMW));
    let params: Float32Array = initialParameters(layout, 9);
    let m: Float32Array = new Float32Array(params.length),
      v: Float32Array = new Float32Array(params.length);
    const losses: number[] = [];
    for (let step = 1; step <= 60; step++) {
      const out = await session.run({
        [N.images]: batch.images,
        [N.targets]: batch.targets,
        [N.params]: vector(params),
        [N.firstMoment]: vector(m),
        [N.secondMoment]: vector(v),
        [N.step]: scalar(step),
        [N.learningRate]: scalar(0.02),
      });
      losses.push(out[N.loss]!.data[0] as number);
      params = out[N.newParams]!.data as Float32Array;
      m = out[N.newFirstMoment]!.data as Float32Array;
      v = out[N.newSecondMoment]!.data as Float32Array;
    }
    expect(losses.every(Number.isFinite)).toBe(true);
    expect(losses.at(-1)!).toBeLessThan(0.6 * losses[0]!);
  });
});
