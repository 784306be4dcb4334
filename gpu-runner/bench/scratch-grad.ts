import * as ort from "onnxruntime-node";
import { parameterLayout } from "../network/parameter-layout.ts";
import { buildGradientModel } from "../network/train-step-model.ts";
import { initialParameters } from "../training/initial-parameters.ts";
import { syntheticBatch, TINY_NETWORK } from "../../test/training/tiny-network.ts";
const layout = parameterLayout(TINY_NETWORK);
const batch = syntheticBatch(2, 2, 8);
const s = await ort.InferenceSession.create(buildGradientModel(TINY_NETWORK));
for (const seed of [8, 9, 3]) {
const p = initialParameters(layout, seed);
const r = await s.run({ images: batch.images, targets: batch.targets, params: new ort.Tensor("float32", p, [p.length]) });
const g = r.gradient.data as Float32Array; const pr = r.prediction.data as Float32Array;
console.log(seed, r.loss.data[0], Math.max(...g.map(Math.abs)), Math.max(...pr.map(Math.abs)), Math.max(...p.map(Math.abs)));
}
{
const p = initialParameters(layout, 8);
const r = await s.run({ images: batch.images, targets: batch.targets, params: new ort.Tensor("float32", p, [p.length]) });
const g = r.gradient.data as Float32Array;
console.log(g.length, p.length, g.byteOffset, g.buffer.byteLength, Math.max(...g.map(Math.abs)));
let worst = 0, wi = -1; for (let i = 0; i < g.length; i++) if (Math.abs(g[i]) > worst) { worst = Math.abs(g[i]); wi = i; }
console.log(worst, wi);
}
