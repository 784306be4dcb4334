// Test helper: one forward pass of an inference model (inference-model.ts) on a [1, C, S, S] input.
import * as ort from "onnxruntime-node";
import { INFERENCE_INPUT, INFERENCE_OUTPUT } from "../../gpu-runner/network/inference-model.ts";

export async function runInference(onnx: Uint8Array, input: Float32Array, channels: number, size: number): Promise<Float32Array> {
  const session = await ort.InferenceSession.create(onnx);
  const out = await session.run({ [INFERENCE_INPUT]: new ort.Tensor("float32", input, [1, channels, size, size]) });
  const data = (out[INFERENCE_OUTPUT]!.data as Float32Array).slice();
  await session.release();
  return data;
}
