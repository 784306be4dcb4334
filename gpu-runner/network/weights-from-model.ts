// Recovers the network config and flat parameter vector from an inference ONNX that
// buildInferenceModel wrote: the starting point for fine-tuning.
import { readFloatInitializers } from "../onnx/model-reader.ts";
import type { NetworkConfig } from "./flow-network.ts";
import { parameterLayout } from "./parameter-layout.ts";

export function weightsFromModel(model: Uint8Array): { network: NetworkConfig; params: Float32Array } {
  const tensors = readFloatInitializers(model);
  const first = tensors.get("down0.conv0.weight");
  if (!first) throw new Error("this ONNX was not exported by this project's trainer (no down0.conv0.weight), so it cannot be fine-tuned");
  const widths: number[] = [];
  for (let level = 0; tensors.has(`down${level}.conv1.weight`); level++) widths.push(tensors.get(`down${level}.conv1.weight`)!.dims[0]);
  const network: NetworkConfig = { inputChannels: first.dims[1], widths };
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
