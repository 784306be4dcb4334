// A colour network (3 input channels) started from a one-channel network's weights. Only the first
// convolution reads the input channels: its kernel for the one channel is divided by 3 and given to
// each of the three, so on a gray image repeated in all three planes (what a colour model reads for
// fluorescence and brightfield, engine/modality.ts) the colour network computes exactly what the
// one-channel network did. Training then starts from what that network knows, and is free to
// learn what the planes' differences (a stain's colour) are worth.
import type { NetworkConfig } from "./flow-network.ts";
import { parameterLayout } from "./parameter-layout.ts";

const FIRST_CONVOLUTION = "down0.conv0.weight";
const COLOUR_CHANNELS = 3;

export function expandToColour(network: NetworkConfig, params: Float32Array): { network: NetworkConfig; params: Float32Array } {
  if (network.inputChannels !== 1) throw new Error(`only a one-channel network can be spread over colour channels; this one reads ${network.inputChannels}`);
  const from = parameterLayout(network);
  if (params.length !== from.totalSize) throw new Error(`weights have ${params.length} values, the network needs ${from.totalSize}`);
  const colour: NetworkConfig = { ...network, inputChannels: COLOUR_CHANNELS };
  const to = parameterLayout(colour);
  const expanded = new Float32Array(to.totalSize);
  const fromSlots = new Map(from.slots.map((slot) => [slot.name, slot]));
  for (const slot of to.slots) {
    const source = fromSlots.get(slot.name)!;
    const weights = params.subarray(source.offset, source.offset + source.size);
    if (slot.name !== FIRST_CONVOLUTION) {
      expanded.set(weights, slot.offset);
      continue;
    }
    // [filters, 1, k, k] -> [filters, 3, k, k]
    const [filters, , kh, kw] = slot.shape as [number, number, number, number];
    const kernel = kh * kw;
    for (let f = 0; f < filters; f++)
      for (let c = 0; c < COLOUR_CHANNELS; c++)
        for (let k = 0; k < kernel; k++) expanded[slot.offset + (f * COLOUR_CHANNELS + c) * kernel + k] = weights[f * kernel + k]! / COLOUR_CHANNELS;
  }
  return { network: colour, params: expanded };
}
