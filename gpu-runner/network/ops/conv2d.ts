// 2-D convolution, stride 1, "same" padding, with bias.
import type { Tape } from "../tape.ts";

const SWAP_BATCH_AND_CHANNELS = [1, 0, 2, 3];

export function conv2d(tape: Tape, x: string, weight: string, bias: string, kernelSize: number): string {
  const g = tape.graph;
  const pad = (kernelSize - 1) / 2;
  const geometry = { kernel_shape: [kernelSize, kernelSize], pads: [pad, pad, pad, pad] };
  const y = g.node("Conv", [x, weight, bias], geometry);
  tape.record([x, weight, bias], [y], ([dy]) => {
    const dx = tape.needsGrad(x) ? g.node("ConvTranspose", [dy!, weight], geometry) : undefined;
    // dW[o,i,a,b] = sum over n,y,x of dY[n,o,y,x] * X[n,i,y+a-pad,x+b-pad]: a convolution of X with dY
    // once batch and channels swap places (batch becomes the summed "channel" axis).
    const xT = g.node("Transpose", [x], { perm: SWAP_BATCH_AND_CHANNELS });
    const dyT = g.node("Transpose", [dy!], { perm: SWAP_BATCH_AND_CHANNELS });
    const dwT = g.node("Conv", [xT, dyT], { pads: [pad, pad, pad, pad] });
    const dw = g.node("Transpose", [dwT], { perm: SWAP_BATCH_AND_CHANNELS });
    const db = g.node("ReduceSum", [dy!, g.int64([0, 2, 3])], { keepdims: 0 });
    return [dx, dw, db];
  });
  return y;
}
