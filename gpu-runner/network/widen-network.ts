// A wider network started from a narrower one's weights, computing what the narrow one did: the
// function-preserving widening of Net2Net (Chen, Goodfellow & Shlens 2016, "Net2WiderNet").
//
// Every tensor of a resolution level carries that level's channels (the two down convolutions,
// the skip that the up convolution's output is added to, the up convolutions), so one mapping per
// level says which old channel each new channel copies: new channel j < old width copies j, a
// further one copies a channel drawn at random. A layer writing a level's channels takes the copied
// channel's kernel and bias; a layer reading them divides each input channel's kernel by how many
// copies its source channel has, so the sum over the copies equals what the one channel gave.
//
// Exact copies would stay exact copies under training (their gradients are equal), so the copies'
// incoming kernels get a little noise (`noise` × that layer's weight spread), as Net2Net advises:
// the wide network's output then differs from the narrow one's by about that fraction.
//
// Numeric hot loops: every index is bounded by a loop over the array's own length (or width ×
// height, or a row's samples). The `!`s state that bound to noUncheckedIndexedAccess rather
// than check it again in the inner loop.
import type { NetworkConfig } from "./flow-network.ts";
import { parameterLayout } from "./parameter-layout.ts";
import type { ParameterSlot } from "./parameter-layout.ts";

interface WidenOptions {
  /** Random source in [0, 1) for the copied channels and the noise (a seeded one for reproducible runs). */
  random: () => number;
  /** Noise on the copies' kernels, as a fraction of the layer's weight standard deviation. */
  noise: number;
}

/** Which level's channels a slot's output (`to`) and input (`from`) dimensions carry; null: none (image, output). */
function slotLevels(name: string, levels: number): { to: number | null; from: number | null } {
  const match = /^(down|up)(\d+)\.conv([01])\.(weight|bias)$/.exec(name);
  if (name.startsWith("output.")) return { to: null, from: 0 };
  if (!match) throw new Error(`unknown weight ${name}`);
  const level = Number(match[2]);
  if (level >= levels) throw new Error(`weight ${name} is beyond the network's ${levels} levels`);
  if (match[1] === "down") return { to: level, from: match[3] === "0" ? (level === 0 ? null : level - 1) : level };
  return { to: level, from: match[3] === "0" ? level + 1 : level };
}

function gaussian(random: () => number): number {
  return Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
}

function standardDeviation(values: Float32Array): number {
  let sum = 0,
    squares = 0;
  for (const v of values) {
    sum += v;
    squares += v * v;
  }
  const mean = sum / values.length;
  return Math.sqrt(Math.max(0, squares / values.length - mean * mean));
}

export function widenNetwork(
  network: NetworkConfig,
  params: Float32Array,
  widths: number[],
  options: WidenOptions,
): { network: NetworkConfig; params: Float32Array } {
  if (widths.length !== network.widths.length)
    throw new Error(`widening keeps the number of levels (${network.widths.length}); ${widths.length} widths were given`);
  if (widths.some((w, level) => w < network.widths[level]!))
    throw new Error(`every level must be at least as wide as before (${network.widths.join(",")}); got ${widths.join(",")}`);
  const from = parameterLayout(network);
  if (params.length !== from.totalSize) throw new Error(`weights have ${params.length} values, the network needs ${from.totalSize}`);

  // copyOf[level][j]: the old channel that new channel j copies; copies[level][i]: how many new channels copy old channel i.
  const copyOf = widths.map((w, level) => {
    const old = network.widths[level]!;
    return Int32Array.from({ length: w }, (_, j) => (j < old ? j : Math.floor(options.random() * old)));
  });
  const copies = copyOf.map((mapping, level) => {
    const counts = new Int32Array(network.widths[level]!);
    for (const i of mapping) counts[i]!++;
    return counts;
  });

  const wide: NetworkConfig = { ...network, widths: [...widths] };
  const to = parameterLayout(wide);
  const narrowSlots = new Map(from.slots.map((slot) => [slot.name, slot]));
  const widened = new Float32Array(to.totalSize);
  for (const slot of to.slots) {
    const source = narrowSlots.get(slot.name)!;
    widenSlot(slot, source, params, widened, slotLevels(slot.name, widths.length), copyOf, copies, options);
  }
  return { network: wide, params: widened };
}

function widenSlot(
  slot: ParameterSlot,
  source: ParameterSlot,
  params: Float32Array,
  widened: Float32Array,
  levels: { to: number | null; from: number | null },
  copyOf: Int32Array[],
  copies: Int32Array[],
  options: WidenOptions,
): void {
  const old = params.subarray(source.offset, source.offset + source.size);
  const outputs = slot.shape[0]!;
  const outputOf = (t: number) => (levels.to === null ? t : copyOf[levels.to]![t]!);
  if (slot.shape.length === 1) {
    for (let t = 0; t < outputs; t++) widened[slot.offset + t] = old[outputOf(t)]!;
    return;
  }
  const [, inputs, kh, kw] = slot.shape as [number, number, number, number];
  const oldInputs = source.shape[1]!;
  const kernel = kh * kw;
  const spread = options.noise * standardDeviation(old);
  for (let t = 0; t < outputs; t++) {
    const oldT = outputOf(t);
    const isCopy = levels.to !== null && t !== oldT;
    for (let f = 0; f < inputs; f++) {
      const oldF = levels.from === null ? f : copyOf[levels.from]![f]!;
      const share = levels.from === null ? 1 : copies[levels.from]![oldF]!;
      const at = slot.offset + (t * inputs + f) * kernel;
      const was = (oldT * oldInputs + oldF) * kernel;
      for (let k = 0; k < kernel; k++) widened[at + k] = old[was + k]! / share + (isCopy ? spread * gaussian(options.random) : 0);
    }
  }
}
