// Recovers the network config and flat parameter vector from an inference ONNX that
// buildInferenceModel wrote: the starting point for fine-tuning.
import { readFloatInitializers } from "../onnx/model-reader.ts";
import type { NetworkConfig } from "./flow-network.ts";
import { parameterLayout } from "./parameter-layout.ts";

export function weightsFromModel(model: Uint8Array): { network: NetworkConfig; params: Float32Array } {
  const tensors = readFloatInitializers(model);
  const first = tensors.get("down0.conv0.weight");
  if (!first) throw new Error("this ONNX was not exported by this project's trainer (no down0.conv0.weight), so it cannot be fine-tuned");
  const inputChannels = first.dims[1];
  if (inputChannels === undefined) throw new Error(`model weight down0.conv0.weight has dims [${first.dims.join(", ")}], not a convolution's [out, in, h, w]`);
  const widths: number[] = [];
  for (let level = 0; ; level++) {
    const conv = tensors.get(`down${level}.conv1.weight`);
    if (!conv) break;
    const width = conv.dims[0];
    if (width === undefined) throw new Error(`model weight down${level}.conv1.weight has no dims, not a convolution's [out, in, h, w]`);
    widths.push(width);
  }
  const network: NetworkConfig = { inputChannels, widths };
  const layout = parameterLayout(network);
  const params = new Float32Array(layout.totalSize);
  for (const slot of layout.slots) {
    const tensor = tensors.get(slot.name);
    if (!tensor || tensor.data.length !== slot.size) {
      throw new Error(`model weight ${slot.name} is ${tensor ? `of size ${tensor.data.length}` : "missing"}, expected ${slot.size} values`);
    }
    params.set(tensor.data, slot.offset);
  }
  return { network, params };
}
