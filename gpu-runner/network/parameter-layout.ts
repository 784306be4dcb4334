// Every weight tensor's place in the flat parameter vector that training, checkpoints and the
// train-step graph pass around.
import { flowNetwork } from "./flow-network.ts";
import type { NetworkConfig, ParameterSource } from "./flow-network.ts";
import { Graph } from "./graph.ts";
import { Tape } from "./tape.ts";

export interface ParameterSlot {
  name: string;
  shape: number[];
  /** Inputs feeding each output unit (He initialisation); 0 for biases. */
  fanIn: number;
  offset: number;
  size: number;
}

export interface ParameterLayout {
  slots: ParameterSlot[];
  totalSize: number;
}

export function parameterLayout(config: NetworkConfig): ParameterLayout {
  const slots: ParameterSlot[] = [];
  let offset = 0;
  const collector: ParameterSource = {
    parameter(name, shape, fanIn) {
      const size = shape.reduce((a, b) => a * b, 1);
      slots.push({ name, shape, fanIn, offset, size });
      offset += size;
      return name;
    },
  };
  flowNetwork(new Tape(new Graph(), false), collector, config, "input");
  return { slots, totalSize: offset };
}
