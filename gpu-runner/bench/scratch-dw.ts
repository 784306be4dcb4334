import * as ort from "onnxruntime-node";
import { Graph, floatTensor } from "../network/graph.ts";
import { encodeModel } from "../onnx/model-builder.ts";
const [N, C, S] = JSON.parse(process.argv[2]);
function viaConv() {
  const g = new Graph();
  const xT = g.node("Transpose", ["x"], { perm: [1, 0, 2, 3] });
  const dyT = g.node("Transpose", ["dy"], { perm: [1, 0, 2, 3] });
  const dwT = g.node("Conv", [xT, dyT], { pads: [1, 1, 1, 1] });
  g.namedNode("Transpose", [dwT], "dw", { perm: [1, 0, 2, 3] });
  return g;
}
function viaMatMul() {
  const g = new Graph();
  const padded = g.node("Pad", ["x", g.int64([0, 0, 1, 1, 0, 0, 1, 1])]);
  const dyFlatT = g.node("Transpose", [g.node("Reshape", ["dy", g.int64([0, 0, -1])])], { perm: [0, 2, 1] }); // [N, HW, O]
  const parts: string[] = [];
  const shape = g.node("Shape", ["x"]);
  const hw = g.node("Slice", [shape, g.int64([2]), g.int64([4])]);
  for (let a = 0; a < 3; a++) for (let b = 0; b < 3; b++) {
    const ends = g.node("Add", [hw, g.int64([a, b])]);
    const shifted = g.node("Slice", [padded, g.int64([a, b]), ends, g.int64([2, 3])]); // [N, I, H, W]
    const flat = g.node("Reshape", [shifted, g.int64([0, 0, -1])]); // [N, I, HW]
    const prod = g.node("MatMul", [flat, dyFlatT]); // [N, I, O]
    parts.push(g.node("ReduceSum", [prod, g.int64([0])], { keepdims: 1 })); // [1, I, O]
  }
  const stacked = g.node("Concat", parts, { axis: 0 }); // [9, I, O]
  const r = g.node("Reshape", [stacked, g.int64([3, 3, C, C])]);
  g.namedNode("Transpose", [r], "dw", { perm: [3, 2, 0, 1] });
  return g;
}
const x = new ort.Tensor("float32", new Float32Array(N * C * S * S).map(() => Math.random()), [N, C, S, S]);
const dy = new ort.Tensor("float32", new Float32Array(N * C * S * S).map(() => Math.random()), [N, C, S, S]);
const outs: Float32Array[] = [];
for (const [name, build] of [["conv", viaConv], ["matmul", viaMatMul]] as const) {
  const g = build();
  const m = encodeModel(g.toSpec("dw", [floatTensor("x", [N, C, S, S]), floatTensor("dy", [N, C, S, S])], [floatTensor("dw", [C, C, 3, 3])]));
  const s = await ort.InferenceSession.create(m, { intraOpNumThreads: 2 });
  let r = await s.run({ x, dy });
  const t = performance.now(), c0 = process.cpuUsage();
  for (let i = 0; i < 3; i++) r = await s.run({ x, dy });
  const cpu = process.cpuUsage(c0);
  outs.push((r.dw.data as Float32Array).slice());
  console.log(name, N, C, S, "ms", ((performance.now() - t) / 3).toFixed(0), "cpu ms", ((cpu.user + cpu.system) / 3000).toFixed(0));
}
let d = 0; for (let i = 0; i < outs[0].length; i++) d = Math.max(d, Math.abs(outs[0][i] - outs[1][i]) / (Math.abs(outs[0][i]) + 1));
console.log("max rel diff", d);
