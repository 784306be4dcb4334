import * as ort from "onnxruntime-node";
import { DEFAULT_ADAMW } from "../network/adamw.ts";
import { parameterLayout } from "../network/parameter-layout.ts";
import { buildTrainStepModel, TrainStepNames as N } from "../network/train-step-model.ts";
import { initialParameters } from "../training/initial-parameters.ts";
import { CPSAM_NETWORK } from "../training/training-config.ts";
const config = CPSAM_NETWORK, batch = 8, crop = 224;
const session = await ort.InferenceSession.create(buildTrainStepModel(config, DEFAULT_ADAMW), { intraOpNumThreads: 2, interOpNumThreads: 1, graphOptimizationLevel: "all" });
const count = parameterLayout(config).totalSize;
const vector = (v: Float32Array) => new ort.Tensor("float32", v, [count]);
const feeds = {
  [N.images]: new ort.Tensor("float32", new Float32Array(batch * crop * crop).map(() => Math.random()), [batch, 1, crop, crop]),
  [N.targets]: new ort.Tensor("float32", new Float32Array(batch * 3 * crop * crop).fill(0.5), [batch, 3, crop, crop]),
  [N.params]: vector(initialParameters(parameterLayout(config), 1)), [N.firstMoment]: vector(new Float32Array(count)), [N.secondMoment]: vector(new Float32Array(count)),
  [N.step]: new ort.Tensor("float32", Float32Array.of(1), []), [N.learningRate]: new ort.Tensor("float32", Float32Array.of(1e-3), []),
};
await session.run(feeds);
const t = performance.now(), c0 = process.cpuUsage();
for (let i = 0; i < 3; i++) await session.run(feeds);
const c = process.cpuUsage(c0);
console.log("step ms", ((performance.now() - t) / 3).toFixed(0), "cpu ms", ((c.user + c.system) / 3000).toFixed(0));
