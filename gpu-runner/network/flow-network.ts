// The one network definition: a small U-Net in the spirit of Cellpose's (Stringer et al. 2021)
// without style vectors or batch normalisation. Run on a recording tape it yields the train-step
// graph's forward pass; on a non-recording tape, the inference graph.
//
// Per level: two 3x3 conv + ReLU; down by 2x2 mean pooling; up by nearest 2x upsampling, a 3x3
// conv to the finer width, the skip connection added, ReLU, then one more 3x3 conv + ReLU.
// Output: 1x1 conv to 3 channels = (dY, dX) x 5 and the cell-probability logit.
import { add } from "./ops/add.ts";
import { conv2d } from "./ops/conv2d.ts";
import { relu } from "./ops/relu.ts";
import { averagePool2x, upsample2x } from "./ops/resample.ts";
import type { Tape } from "./tape.ts";

export interface NetworkConfig {
  inputChannels: number;
  /** Channel count per resolution level, finest first; levels - 1 halvings. */
  widths: number[];
}

export const OUTPUT_CHANNELS = 3;

/** Where a weight tensor's value comes from (an initializer, or a slice of the flat parameter input). */
export interface ParameterSource {
  parameter(name: string, shape: number[], fanIn: number): string;
}

function convRelu(tape: Tape, params: ParameterSource, name: string, x: string, from: number, to: number): string {
  return relu(tape, convLayer(tape, params, name, x, from, to, 3));
}

function convLayer(tape: Tape, params: ParameterSource, name: string, x: string, from: number, to: number, kernel: number): string {
  const weight = params.parameter(`${name}.weight`, [to, from, kernel, kernel], from * kernel * kernel);
  const bias = params.parameter(`${name}.bias`, [to], 0);
  return conv2d(tape, x, weight, bias, kernel, from, to);
}

/** Emits the network on `input` ([N, inputChannels, H, W]); returns the [N, 3, H, W] output. */
export function flowNetwork(tape: Tape, params: ParameterSource, config: NetworkConfig, input: string): string {
  const { widths } = config;
  const [finest] = widths;
  if (finest === undefined) throw new Error("a network needs at least one level: its widths are empty");
  const skips: string[] = [];
  let x = input;
  let channels = config.inputChannels;
  for (const [level, width] of widths.entries()) {
    if (level > 0) x = averagePool2x(tape, x);
    x = convRelu(tape, params, `down${level}.conv0`, x, channels, width);
    x = convRelu(tape, params, `down${level}.conv1`, x, width, width);
    channels = width;
    skips.push(x);
  }
  // level + 1 < widths.length, and the loop above pushed one skip per level.
  for (let level = widths.length - 2; level >= 0; level--) {
    const width = widths[level]!;
    const upsampled = upsample2x(tape, x);
    const merged = add(tape, convLayer(tape, params, `up${level}.conv0`, upsampled, widths[level + 1]!, width, 3), skips[level]!);
    x = convRelu(tape, params, `up${level}.conv1`, relu(tape, merged), width, width);
  }
  return convLayer(tape, params, "output", x, finest, OUTPUT_CHANNELS, 1);
}
