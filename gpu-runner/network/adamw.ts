// AdamW (Loshchilov & Hutter 2019: Adam with decoupled weight decay) on flat vectors, as ONNX ops.
import type { Graph } from "./graph.ts";

export interface AdamWSettings {
  beta1: number;
  beta2: number;
  epsilon: number;
  weightDecay: number;
}

export const DEFAULT_ADAMW: AdamWSettings = { beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 1e-4 };

interface AdamWValues {
  params: string;
  gradient: string;
  firstMoment: string;
  secondMoment: string;
  /** Float scalar, 1 for the first update (bias correction needs it). */
  step: string;
  learningRate: string;
}

/** Emits the update; the new values are written to the given output names. */
export function emitAdamW(g: Graph, settings: AdamWSettings, v: AdamWValues, outputs: { params: string; firstMoment: string; secondMoment: string }): void {
  const { beta1, beta2 } = settings;
  const m = g.namedNode("Add", [g.node("Mul", [v.firstMoment, g.scalar(beta1)]), g.node("Mul", [v.gradient, g.scalar(1 - beta1)])], outputs.firstMoment);
  const gradSquared = g.node("Mul", [v.gradient, v.gradient]);
  const s = g.namedNode("Add", [g.node("Mul", [v.secondMoment, g.scalar(beta2)]), g.node("Mul", [gradSquared, g.scalar(1 - beta2)])], outputs.secondMoment);
  const correction1 = g.node("Sub", [g.scalar(1), g.node("Pow", [g.scalar(beta1), v.step])]);
  const correction2 = g.node("Sub", [g.scalar(1), g.node("Pow", [g.scalar(beta2), v.step])]);
  const mHat = g.node("Div", [m, correction1]);
  const sHat = g.node("Div", [s, correction2]);
  const adamDirection = g.node("Div", [mHat, g.node("Add", [g.node("Sqrt", [sHat]), g.scalar(settings.epsilon)])]);
  const direction = g.node("Add", [adamDirection, g.node("Mul", [v.params, g.scalar(settings.weightDecay)])]);
  g.namedNode("Sub", [v.params, g.node("Mul", [direction, v.learningRate])], outputs.params);
}
