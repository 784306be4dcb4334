// 2-D convolution, stride 1, "same" padding, with bias.
import type { Graph } from "../graph.ts";
import type { Tape } from "../tape.ts";

/**
 * dW[o, i, a, b] = sum over n, y, x of X[n, i, y + a - pad, x + b - pad] * dY[n, o, y, x]: for each
 * kernel offset (a, b) one batched MatMul of the shifted input [N, I, HW] with dY as [N, HW, O].
 * Measured on the 2-core CPU, this is 2-4x faster than the equivalent single Conv of X and dY with
 * batch and channels swapped, whose tiny 3x3 output leaves onnxruntime's GEMM one thread's work.
 */
function weightGradient(g: Graph, x: string, dy: string, kernelSize: number, inChannels: number, outChannels: number): string {
  const pad = (kernelSize - 1) / 2;
  const source = pad === 0 ? x : g.node("Pad", [x, g.int64([0, 0, pad, pad, 0, 0, pad, pad])]);
  const dyRows = g.node("Transpose", [g.node("Reshape", [dy, g.int64([0, 0, -1])])], { perm: [0, 2, 1] }); // [N, HW, O]
  const size = g.node("Slice", [g.node("Shape", [x]), g.int64([2]), g.int64([4])]); // (H, W)
  const perOffset: string[] = [];
  for (let a = 0; a < kernelSize; a++) {
    for (let b = 0; b < kernelSize; b++) {
      const shifted = pad === 0 ? x : g.node("Slice", [source, g.int64([a, b]), g.node("Add", [size, g.int64([a, b])]), g.int64([2, 3])]);
      const product = g.node("MatMul", [g.node("Reshape", [shifted, g.int64([0, 0, -1])]), dyRows]); // [N, I, O]
      perOffset.push(g.node("ReduceSum", [product, g.int64([0])], { keepdims: 1 }));
    }
  }
  const stacked = perOffset.length === 1 ? perOffset[0]! : g.node("Concat", perOffset, { axis: 0 }); // [k*k, I, O]
  const byOffset = g.node("Reshape", [stacked, g.int64([kernelSize, kernelSize, inChannels, outChannels])]);
  return g.node("Transpose", [byOffset], { perm: [3, 2, 0, 1] });
}

export function conv2d(tape: Tape, x: string, weight: string, bias: string, kernelSize: number, inChannels: number, outChannels: number): string {
  const g = tape.graph;
  const pad = (kernelSize - 1) / 2;
  const geometry = { kernel_shape: [kernelSize, kernelSize], pads: [pad, pad, pad, pad] };
  const y = g.node("Conv", [x, weight, bias], geometry);
  tape.record([x, weight, bias], [y], ([dy]) => {
    const dx = tape.needsGrad(x) ? g.node("ConvTranspose", [dy!, weight], geometry) : undefined;
    const dw = weightGradient(g, x, dy!, kernelSize, inChannels, outChannels);
    const db = g.node("ReduceSum", [dy!, g.int64([0, 2, 3])], { keepdims: 0 });
    return [dx, dw, db];
  });
  return y;
}
