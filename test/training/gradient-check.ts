// Test helper: compares a graph's analytic gradients with central finite differences of its
// forward pass, both run in onnxruntime-node.
import * as ort from "onnxruntime-node";
import { encodeModel } from "../../gpu-runner/onnx/model-builder.ts";
import { floatTensor, Graph } from "../../gpu-runner/network/graph.ts";
import { Tape } from "../../gpu-runner/network/tape.ts";
import { SeededRandom } from "../../gpu-runner/training/random.ts";

export interface TensorInput {
  name: string;
  shape: number[];
  /** Values; random in [-1, 1] when omitted. */
  data?: Float32Array;
  /** Whether the gradient with respect to this input is checked. */
  differentiable: boolean;
}

export function randomData(size: number, seed: number, low = -1, high = 1): Float32Array {
  const random = new SeededRandom(seed);
  return Float32Array.from({ length: size }, () => random.uniform(low, high));
}

const sizeOf = (shape: number[]) => shape.reduce((a, b) => a * b, 1);

/**
 * Builds "loss = sum(op(inputs) * projection)" for a fixed random projection (or op's own scalar
 * output when it is already a loss) with the gradient of every differentiable input as outputs.
 */
async function lossAndGradientSession(inputs: TensorInput[], op: (tape: Tape) => string, outputShape: number[] | "scalar"): Promise<ort.InferenceSession> {
  const g = new Graph();
  const tape = new Tape(g, true);
  for (const input of inputs) if (input.differentiable) tape.markTrainable(input.name);
  const y = op(tape);
  let loss = y;
  if (outputShape !== "scalar") {
    const projection = g.addInitializer("projection", outputShape, randomData(sizeOf(outputShape), 99));
    loss = g.node("ReduceSum", [g.node("Mul", [y, projection])], { keepdims: 0 });
    tape.record([y], [loss], ([dLoss]) => [g.node("Mul", [projection, dLoss!])]);
  }
  g.namedNode("Identity", [loss], "loss");
  const differentiable = inputs.filter((i) => i.differentiable);
  const grads = tape.gradients(
    loss,
    g.scalar(1),
    differentiable.map((i) => i.name),
  );
  // One gradient per wanted name, in order.
  for (const [k, input] of differentiable.entries()) g.namedNode("Identity", [grads[k]!], `grad_${input.name}`);
  const spec = g.toSpec(
    "gradient_check",
    inputs.map((i) => floatTensor(i.name, i.shape)),
    [floatTensor("loss", []), ...differentiable.map((i) => floatTensor(`grad_${i.name}`, i.shape))],
  );
  return ort.InferenceSession.create(encodeModel(spec));
}

export interface GradientComparison {
  input: string;
  analytic: number[];
  numeric: number[];
}

/** Analytic vs numeric gradients at `samples` coordinates of each differentiable input. */
export async function compareGradients(
  inputs: TensorInput[],
  op: (tape: Tape) => string,
  outputShape: number[] | "scalar",
  options: { samples?: number; epsilon?: number } = {},
): Promise<GradientComparison[]> {
  const samples = options.samples ?? 12;
  const epsilon = options.epsilon ?? 1e-2;
  const session = await lossAndGradientSession(inputs, op, outputShape);
  // One value array per input, and one session output per name the graph gave: "loss" and "grad_<input>".
  const values = inputs.map((input, k) => input.data ?? randomData(sizeOf(input.shape), 1 + k));
  const run = async () => {
    const feeds: Record<string, ort.Tensor> = {};
    inputs.forEach((input, k) => (feeds[input.name] = new ort.Tensor("float32", values[k]!, input.shape)));
    return session.run(feeds);
  };
  const base = await run();
  const comparisons: GradientComparison[] = [];
  const random = new SeededRandom(7);
  for (const [k, input] of inputs.entries()) {
    if (!input.differentiable) continue;
    const analyticAll = base[`grad_${input.name}`]!.data as Float32Array;
    const data = values[k]!;
    const comparison: GradientComparison = { input: input.name, analytic: [], numeric: [] };
    for (let s = 0; s < Math.min(samples, data.length); s++) {
      // Below data.length either way; the gradient has the input's shape.
      const index = samples >= data.length ? s : random.below(data.length);
      const original = data[index]!;
      data[index] = original + epsilon;
      const plus = (await run()).loss!.data[0] as number;
      data[index] = original - epsilon;
      const minus = (await run()).loss!.data[0] as number;
      data[index] = original;
      comparison.analytic.push(analyticAll[index]!);
      comparison.numeric.push((plus - minus) / (2 * epsilon));
    }
    comparisons.push(comparison);
  }
  return comparisons;
}

/** Largest |analytic - numeric| relative to the gradients' overall scale. */
export function relativeError(c: GradientComparison): number {
  const scale = Math.max(1e-3, ...c.analytic.map(Math.abs), ...c.numeric.map(Math.abs));
  let worst = 0;
  // One numeric gradient per analytic one.
  for (const [i, analytic] of c.analytic.entries()) worst = Math.max(worst, Math.abs(analytic - c.numeric[i]!) / scale);
  return worst;
}
