import * as ort from "onnxruntime-node";
import { buildInferenceModel } from "../network/inference-model.ts";
import { buildTrainStepModel, buildGradientModel } from "../network/train-step-model.ts";
import { parameterLayout } from "../network/parameter-layout.ts";
import { initialParameters } from "../training/initial-parameters.ts";
import { DEFAULT_ADAMW } from "../network/adamw.ts";
const widths = JSON.parse(process.argv[2] ?? "[16,32,64]");
const config = { inputChannels: 1, widths };
const layout = parameterLayout(config);
console.log("params", layout.totalSize);
const p = initialParameters(layout, 1);
const inf = await ort.InferenceSession.create(buildInferenceModel(config, p), { intraOpNumThreads: 2 });
const S = 1024;
const x = new ort.Tensor("float32", new Float32Array(S * S).map(() => Math.random()), [1, 1, S, S]);
for (let i = 0; i < 3; i++) { const t = performance.now(); await inf.run({ input: x }); console.log("infer 1Mpx ms", (performance.now() - t).toFixed(0)); }
const B = +(process.argv[3] ?? 8), T = +(process.argv[4] ?? 224);
const ts = await ort.InferenceSession.create(buildTrainStepModel(config, DEFAULT_ADAMW), { intraOpNumThreads: 2 });
const P = layout.totalSize;
const feeds = {
  images: new ort.Tensor("float32", new Float32Array(B * T * T).map(() => Math.random()), [B, 1, T, T]),
  targets: new ort.Tensor("float32", new Float32Array(B * 3 * T * T).map(() => Math.random()), [B, 3, T, T]),
  params: new ort.Tensor("float32", p, [P]), adam_m: new ort.Tensor("float32", new Float32Array(P), [P]), adam_v: new ort.Tensor("float32", new Float32Array(P), [P]),
  step: new ort.Tensor("float32", Float32Array.of(1), []), learning_rate: new ort.Tensor("float32", Float32Array.of(1e-3), []),
};
for (let i = 0; i < 3; i++) { const t = performance.now(); const r = await ts.run(feeds); console.log("train step ms", (performance.now() - t).toFixed(0), r.loss.data[0]); }
