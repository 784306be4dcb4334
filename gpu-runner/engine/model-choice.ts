// Which model the CLIs and benchmarks use: an explicit ONNX path, the built-in hand-set reference
// network ("reference"), or by default the shipped base model cpsam once its weights exist.
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { loadModel, loadModelFromBytes, type ExecutionProviderChoice, type LoadedModel } from "./model.ts";
import { buildReferenceModel } from "./reference-model.ts";

export const DEFAULT_MODEL_PATH = fileURLToPath(new URL("../models/cpsam/cpsam.onnx", import.meta.url));

export async function chooseModel(
  model: string | undefined,
  executionProvider: ExecutionProviderChoice = "auto",
  referenceDiameter = 30,
): Promise<LoadedModel> {
  if (model === "reference") {
    const { onnx, manifest } = buildReferenceModel({ diameter: referenceDiameter });
    return loadModelFromBytes(onnx, manifest, { executionProvider });
  }
  const path = model ?? DEFAULT_MODEL_PATH;
  if (model === undefined && !existsSync(path)) {
    throw new Error(
      `no model given and the base model does not exist yet: ${path} (trained cpsam weights have not been delivered). ` +
        `Pass --model <file.onnx> (with its .json manifest next to it), or --model reference for the built-in hand-set network.`,
    );
  }
  return loadModel(path, { executionProvider });
}
