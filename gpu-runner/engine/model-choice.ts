// Which model the CLIs and benchmarks use: an explicit ONNX path, a public model by name (its
// folder under gpu-runner/models/, e.g. "cpsam"), the built-in hand-set reference network
// ("reference"), or by default the shipped base model cpsam once its weights exist.
import { existsSync, readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { loadModel, loadModelFromBytes, type ExecutionProviderChoice, type LoadedModel } from "./model.ts";
import { buildReferenceModel } from "./reference-model.ts";

const MODELS_DIR = fileURLToPath(new URL("../models/", import.meta.url));
export const DEFAULT_MODEL_PATH = `${MODELS_DIR}cpsam/cpsam.onnx`;

/** Public models shipped with the runner: folders of gpu-runner/models/ holding <name>.onnx. */
function publicModelNames(): string[] {
  return readdirSync(MODELS_DIR, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(`${MODELS_DIR}${entry.name}/${entry.name}.onnx`))
    .map((entry) => entry.name)
    .sort();
}

/** A --model value naming a model rather than a file: no folder and no extension. */
function isName(model: string): boolean {
  return /^[a-z0-9][a-z0-9._-]*$/i.test(model) && !model.endsWith(".onnx");
}

export async function chooseModel(
  model: string | undefined,
  executionProvider: ExecutionProviderChoice = "auto",
  referenceDiameter = 30,
): Promise<LoadedModel> {
  if (model === "reference") {
    const { onnx, manifest } = buildReferenceModel({ diameter: referenceDiameter });
    return loadModelFromBytes(onnx, manifest, { executionProvider });
  }
  if (model !== undefined && isName(model)) {
    const names = publicModelNames();
    if (!names.includes(model))
      throw new Error(`no public model named "${model}" (public models: ${names.join(", ") || "none"}); pass a path to an .onnx file for any other`);
    return loadModel(`${MODELS_DIR}${model}/${model}.onnx`, { executionProvider });
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
