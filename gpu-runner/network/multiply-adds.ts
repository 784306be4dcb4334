// Multiply-adds per input pixel of the network: the measure of its cost that benchmarks divide
// timings by. A level-l layer runs on 1/4^l of the pixels.
import type { NetworkConfig } from "./flow-network.ts";
import { parameterLayout } from "./parameter-layout.ts";

export function multiplyAddsPerPixel(config: NetworkConfig): number {
  let total = 0;
  for (const slot of parameterLayout(config).slots) {
    if (!slot.name.endsWith(".weight")) continue;
    const level = Number(/^(?:down|up)(\d+)\./.exec(slot.name)?.[1] ?? 0);
    total += slot.size / 4 ** level;
  }
  return total;
}
