import * as ort from "onnxruntime-node";
import { encodeModel } from "../onnx/model-builder.ts";
import { floatTensor } from "../network/graph.ts";
const C = 256, S = 128;
const w = new Float32Array(C * C * 9).map(() => Math.random() - 0.5);
const model = encodeModel({ name: "c", inputs: [floatTensor("x", [1, C, S, S])], outputs: [floatTensor("y", [1, C, S, S])], initializers: [{ name: "w", dims: [C, C, 3, 3], data: w }], nodes: [{ op: "Conv", inputs: ["x", "w"], outputs: ["y"], attributes: { pads: [1, 1, 1, 1], kernel_shape: [3, 3] } }] });
for (const level of ["disabled", "all"] as const) {
  const s = await ort.InferenceSession.create(model, { intraOpNumThreads: 2, graphOptimizationLevel: level });
  const x = new ort.Tensor("float32", new Float32Array(C * S * S).map(() => Math.random()), [1, C, S, S]);
  await s.run({ x });
  const t0 = Date.now(), p0 = performance.now(), c0 = process.cpuUsage();
  for (let i = 0; i < 5; i++) await s.run({ x });
  const sec = (performance.now() - p0) / 5000, cpu = process.cpuUsage(c0);
  console.log(level, "conv GFLOP/s", (2 * C * C * 9 * S * S / sec / 1e9).toFixed(1), "wall(Date) ms", (Date.now() - t0) / 5, "cpu user s", cpu.user / 1e6);
}
