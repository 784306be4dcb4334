// He-normal weights (He et al. 2015, for ReLU networks) and zero biases.
import type { ParameterLayout } from "../network/parameter-layout.ts";
import { SeededRandom } from "./random.ts";

export function initialParameters(layout: ParameterLayout, seed: number): Float32Array {
  const random = new SeededRandom(seed);
  const params = new Float32Array(layout.totalSize);
  for (const slot of layout.slots) {
    if (slot.fanIn === 0) continue;
    const std = Math.sqrt(2 / slot.fanIn);
    for (let i = 0; i < slot.size; i++) params[slot.offset + i] = std * random.normal();
  }
  return params;
}
