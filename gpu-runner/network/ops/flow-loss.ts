// Cellpose's segmentation loss (after Cellpose's train.py, Stringer et al. 2021): mean squared
// error between the predicted flows and 5x the target flows, halved, plus binary cross-entropy of
// the cell-probability logit against the foreground mask.
import { DataType } from "../../onnx/model-builder.ts";
import type { Graph } from "../graph.ts";
import { FLOW_SCALE } from "../../engine/flow-targets.ts";
import type { Tape } from "../tape.ts";

function channels(g: Graph, x: string, from: number, to: number): string {
  return g.node("Slice", [x, g.int64([from]), g.int64([to]), g.int64([1])]);
}

function elementCount(g: Graph, x: string): string {
  return g.node("Cast", [g.node("Size", [x])], { to: DataType.FLOAT });
}

/**
 * prediction: [N, 3, H, W] = (dY, dX, cell-probability logit); target: [N, 3, H, W] = (unit flow
 * dY, unit flow dX, foreground 0/1). Returns the scalar loss.
 */
export function flowLoss(tape: Tape, prediction: string, target: string): string {
  const g = tape.graph;
  const flowError = g.node("Sub", [channels(g, prediction, 0, 2), g.node("Mul", [channels(g, target, 0, 2), g.scalar(FLOW_SCALE)])]);
  const flowLossValue = g.node("Mul", [g.node("ReduceMean", [g.node("Mul", [flowError, flowError])], { keepdims: 0 }), g.scalar(0.5)]);

  const logit = channels(g, prediction, 2, 3);
  const foreground = channels(g, target, 2, 3);
  // max(z, 0) - z*y + log(1 + exp(-|z|)): the overflow-free form of BCE with logits.
  const crossEntropy = g.node("Add", [
    g.node("Sub", [g.node("Relu", [logit]), g.node("Mul", [logit, foreground])]),
    g.node("Softplus", [g.node("Neg", [g.node("Abs", [logit])])]),
  ]);
  const loss = g.node("Add", [flowLossValue, g.node("ReduceMean", [crossEntropy], { keepdims: 0 })]);

  tape.record([prediction, target], [loss], ([dLoss]) => {
    const dFlow = g.node("Div", [flowError, elementCount(g, flowError)]);
    const dLogit = g.node("Div", [g.node("Sub", [g.node("Sigmoid", [logit]), foreground]), elementCount(g, logit)]);
    const dPrediction = g.node("Mul", [g.node("Concat", [dFlow, dLogit], { axis: 1 }), dLoss!]);
    return [dPrediction, undefined];
  });
  return loss;
}
