// The inference graph: the engine's model contract, float32 [N, C, H, W] in, [N, 3, H, W] out.
import { encodeModel } from "../onnx/model-builder.ts";
import { flowNetwork, OUTPUT_CHANNELS } from "./flow-network.ts";
import type { NetworkConfig } from "./flow-network.ts";
import { floatTensor, Graph } from "./graph.ts";
import { parameterLayout } from "./parameter-layout.ts";
import { Tape } from "./tape.ts";

// Exported for its tests only (test/training/network-gradient.test.ts, test/training/run-inference.ts).
export const INFERENCE_INPUT = "input";
// Exported for its tests only (test/training/network-gradient.test.ts, test/training/run-inference.ts).
export const INFERENCE_OUTPUT = "output";

export function buildInferenceModel(config: NetworkConfig, parameters: Float32Array): Uint8Array {
  const layout = parameterLayout(config);
  if (parameters.length !== layout.totalSize) {
    throw new Error(`parameter vector has ${parameters.length} values, the network needs ${layout.totalSize}`);
  }
  const g = new Graph();
  const slotByName = new Map(layout.slots.map((s) => [s.name, s]));
  const fromVector = {
    parameter(name: string, shape: number[]): string {
      const slot = slotByName.get(name)!;
      return g.addInitializer(name, shape, parameters.slice(slot.offset, slot.offset + slot.size));
    },
  };
  const output = flowNetwork(new Tape(g, false), fromVector, config, INFERENCE_INPUT);
  g.namedNode("Identity", [output], INFERENCE_OUTPUT);
  const spec = g.toSpec(
    "flow_network",
    [floatTensor(INFERENCE_INPUT, ["N", config.inputChannels, "H", "W"])],
    [floatTensor(INFERENCE_OUTPUT, ["N", OUTPUT_CHANNELS, "H", "W"])],
  );
  return encodeModel(spec);
}
