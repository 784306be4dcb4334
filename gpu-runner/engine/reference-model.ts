// A small, fixed, hand-set convolution network that honours the model contract (model.ts), for
// tests and for running the CLIs end to end before trained weights exist. It is not trained:
//   cell probability logit = gain · (3x3 blur of the channel mean − level)
//   flows = 5 · ∇G / |∇G|, G = Gaussian blur (σ = diameter / 5) of the channel mean,
// i.e. flows run uphill towards the brightest point of each blob, which is where a bright,
// roughly round nucleus has its centre. Good enough to exercise every stage on real images.
import { DataType, encodeModel, type Initializer, type NodeSpec } from "../onnx/model-builder.ts";
import { FLOW_SCALE } from "./flow-targets.ts";
import type { ModelManifest } from "./model.ts";

interface ReferenceModelOptions {
  channels?: number;
  diameter?: number;
  tileSize?: number;
  /** Normalised intensity at which the logit crosses 0. */
  level?: number;
}

export function buildReferenceModel(options: ReferenceModelOptions = {}): { onnx: Uint8Array; manifest: ModelManifest } {
  const channels = options.channels ?? 1;
  const diameter = options.diameter ?? 30;
  const tileSize = options.tileSize ?? 256;
  const level = options.level ?? 0.25;
  const gain = 12;

  const sigma = diameter / 5;
  const radius = Math.ceil(3 * sigma);
  const gauss = new Float32Array(2 * radius + 1);
  let sum = 0;
  for (let i = -radius; i <= radius; i++) sum += gauss[i + radius] = Math.exp(-(i * i) / (2 * sigma * sigma));
  for (let i = 0; i < gauss.length; i++) gauss[i]! /= sum;

  const k = 2 * radius + 1;
  const rowKernel = new Float32Array(channels * k); // [1, C, 1, k]: also averages the channels
  for (let c = 0; c < channels; c++) for (let i = 0; i < k; i++) rowKernel[c * k + i] = gauss[i]! / channels;
  const blur3 = [1, 2, 1, 2, 4, 2, 1, 2, 1].map((v) => v / 16);
  const probKernel = new Float32Array(channels * 9);
  for (let c = 0; c < channels; c++) for (let i = 0; i < 9; i++) probKernel[c * 9 + i] = (gain * blur3[i]!) / channels;
  // Central differences: output 0 = d/dy, output 1 = d/dx (cross-correlation, as ONNX Conv).
  const gradient = Float32Array.from([0, -0.5, 0, 0, 0, 0, 0, 0.5, 0, 0, 0, 0, -0.5, 0, 0.5, 0, 0, 0]);

  const initializers: Initializer[] = [
    { name: "row_kernel", dims: [1, channels, 1, k], data: rowKernel },
    { name: "column_kernel", dims: [1, 1, k, 1], data: gauss },
    { name: "gradient_kernel", dims: [2, 1, 3, 3], data: gradient },
    { name: "sum_kernel", dims: [1, 2, 1, 1], data: Float32Array.from([1, 1]) },
    { name: "prob_kernel", dims: [1, channels, 3, 3], data: probKernel },
    { name: "prob_bias", dims: [1], data: Float32Array.from([-gain * level]) },
    { name: "epsilon", dims: [], data: Float32Array.from([1e-8]) },
    { name: "flow_scale", dims: [], data: Float32Array.from([FLOW_SCALE]) },
  ];
  const nodes: NodeSpec[] = [
    { op: "Conv", inputs: ["image", "row_kernel"], outputs: ["blur_rows"], attributes: { pads: [0, radius, 0, radius] } },
    { op: "Conv", inputs: ["blur_rows", "column_kernel"], outputs: ["blurred"], attributes: { pads: [radius, 0, radius, 0] } },
    { op: "Conv", inputs: ["blurred", "gradient_kernel"], outputs: ["gradient"], attributes: { pads: [1, 1, 1, 1] } },
    { op: "Mul", inputs: ["gradient", "gradient"], outputs: ["gradient_sq"] },
    { op: "Conv", inputs: ["gradient_sq", "sum_kernel"], outputs: ["norm_sq"] },
    { op: "Add", inputs: ["norm_sq", "epsilon"], outputs: ["norm_sq_eps"] },
    { op: "Sqrt", inputs: ["norm_sq_eps"], outputs: ["norm"] },
    { op: "Div", inputs: ["gradient", "norm"], outputs: ["unit_flow"] },
    { op: "Mul", inputs: ["unit_flow", "flow_scale"], outputs: ["flows"] },
    { op: "Conv", inputs: ["image", "prob_kernel", "prob_bias"], outputs: ["cellprob"], attributes: { pads: [1, 1, 1, 1] } },
    { op: "Concat", inputs: ["flows", "cellprob"], outputs: ["output"], attributes: { axis: 1 } },
  ];
  const onnx = encodeModel({
    name: "reference",
    inputs: [{ name: "image", type: DataType.FLOAT, shape: ["N", channels, "H", "W"] }],
    outputs: [{ name: "output", type: DataType.FLOAT, shape: ["N", 3, "H", "W"] }],
    initializers,
    nodes,
  });
  const manifest: ModelManifest = {
    name: "reference",
    version: "1.0.0",
    channels,
    tileSize,
    diameter,
    normalization: { lower: 1, upper: 99 },
    provenance: {
      source: "hand-set convolutions (gpu-runner/engine/reference-model.ts), not trained",
      license: "same as this repository",
      notes: "flows follow the gradient of a Gaussian-blurred image; for tests and end-to-end runs only",
    },
  };
  return { onnx, manifest };
}
