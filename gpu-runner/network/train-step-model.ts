// The train-step graph: forward, hand-derived backward (see tape.ts) and an AdamW update, all in
// standard ONNX ops, so an ordinary InferenceSession on any execution provider trains the network.
// Weights and Adam moments travel as three flat float32 vectors (see parameter-layout.ts).
import { encodeModel } from "../onnx/model-builder.ts";
import { emitAdamW } from "./adamw.ts";
import type { AdamWSettings } from "./adamw.ts";
import { flowNetwork, OUTPUT_CHANNELS } from "./flow-network.ts";
import type { NetworkConfig } from "./flow-network.ts";
import { floatTensor, Graph } from "./graph.ts";
import { flowLoss } from "./ops/flow-loss.ts";
import { parameterLayout } from "./parameter-layout.ts";
import { Tape } from "./tape.ts";

/** Value names of the train-step (and gradient) graph's inputs and outputs. */
export const TrainStepNames = {
  images: "images",
  targets: "targets",
  params: "params",
  firstMoment: "adam_m",
  secondMoment: "adam_v",
  step: "step",
  learningRate: "learning_rate",
  loss: "loss",
  newParams: "params_out",
  newFirstMoment: "adam_m_out",
  newSecondMoment: "adam_v_out",
  gradient: "gradient",
  prediction: "prediction",
} as const;
const N = TrainStepNames;

/** Emits forward + loss + backward; returns the flat gradient's value name. */
function emitLossAndGradient(g: Graph, config: NetworkConfig): string {
  const layout = parameterLayout(config);
  const tape = new Tape(g, true);
  const slotByName = new Map(layout.slots.map((s) => [s.name, s]));
  const weightNames: string[] = [];
  const fromFlatVector = {
    parameter(name: string, shape: number[]): string {
      const slot = slotByName.get(name)!;
      const flat = g.node("Slice", [N.params, g.int64([slot.offset]), g.int64([slot.offset + slot.size])]);
      const weight = g.node("Reshape", [flat, g.int64(shape)]);
      tape.markTrainable(weight);
      weightNames.push(weight);
      return weight;
    },
  };
  const prediction = flowNetwork(tape, fromFlatVector, config, N.images);
  g.namedNode("Identity", [prediction], N.prediction);
  const loss = flowLoss(tape, prediction, N.targets);
  g.namedNode("Identity", [loss], N.loss);
  const grads = tape.gradients(loss, g.scalar(1), weightNames);
  // flowNetwork asks for its weights in the layout's order, one per slot: grads[i] is slot i's.
  const flatGrads = grads.map((grad, i) =>
    grad === undefined ? g.node("ConstantOfShape", [g.int64([layout.slots[i]!.size])]) : g.node("Reshape", [grad, g.int64([-1])]),
  );
  return g.namedNode("Concat", flatGrads, N.gradient, { axis: 0 });
}

function commonInputs(config: NetworkConfig, parameterCount: number) {
  return [
    floatTensor(N.images, ["N", config.inputChannels, "H", "W"]),
    floatTensor(N.targets, ["N", OUTPUT_CHANNELS, "H", "W"]),
    floatTensor(N.params, [parameterCount]),
  ];
}

// Exported for its tests only (test/training/network-gradient.test.ts, test/training/train-step.test.ts).
/** Loss, flat gradient and prediction for given parameters: what gradient checks examine. */
export function buildGradientModel(config: NetworkConfig): Uint8Array {
  const g = new Graph();
  const count = parameterLayout(config).totalSize;
  emitLossAndGradient(g, config);
  const spec = g.toSpec("flow_network_gradient", commonInputs(config, count), [
    floatTensor(N.loss, []),
    floatTensor(N.gradient, [count]),
    floatTensor(N.prediction, ["N", OUTPUT_CHANNELS, "H", "W"]),
  ]);
  return encodeModel(spec);
}

/** One optimisation step: loss of the incoming parameters, then the AdamW-updated state. */
export function buildTrainStepModel(config: NetworkConfig, adamW: AdamWSettings): Uint8Array {
  const g = new Graph();
  const count = parameterLayout(config).totalSize;
  const gradient = emitLossAndGradient(g, config);
  emitAdamW(
    g,
    adamW,
    { params: N.params, gradient, firstMoment: N.firstMoment, secondMoment: N.secondMoment, step: N.step, learningRate: N.learningRate },
    { params: N.newParams, firstMoment: N.newFirstMoment, secondMoment: N.newSecondMoment },
  );
  const spec = g.toSpec(
    "flow_network_train_step",
    [
      ...commonInputs(config, count),
      floatTensor(N.firstMoment, [count]),
      floatTensor(N.secondMoment, [count]),
      floatTensor(N.step, []),
      floatTensor(N.learningRate, []),
    ],
    [floatTensor(N.loss, []), floatTensor(N.newParams, [count]), floatTensor(N.newFirstMoment, [count]), floatTensor(N.newSecondMoment, [count])],
  );
  return encodeModel(spec);
}
