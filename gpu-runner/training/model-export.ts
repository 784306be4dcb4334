// Writes trained weights as the engine's model: <name>.onnx (the inference graph) and
// <name>.json (its manifest, engine/model.ts).
import { renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ModelManifest } from "../engine/model.ts";
import { DEFAULT_PERCENTILES } from "../engine/normalize.ts";
import { buildInferenceModel } from "../network/inference-model.ts";
import { networkReads } from "./network-input.ts";
import type { TrainingConfig } from "./training-config.ts";

export function exportModel(
  config: TrainingConfig,
  params: Float32Array,
  name: string,
  version: string,
  provenance: ModelManifest["provenance"],
): { onnx: Uint8Array; manifest: ModelManifest } {
  const onnx = buildInferenceModel(config.network, params);
  const manifest: ModelManifest = {
    name,
    version,
    ...networkReads(config.network.inputChannels),
    tileSize: config.cropSize,
    diameter: config.modelDiameter,
    normalization: DEFAULT_PERCENTILES,
    provenance,
  };
  return { onnx, manifest };
}

export function writeModel(dir: string, model: { onnx: Uint8Array; manifest: ModelManifest }): string {
  const base = join(dir, model.manifest.name);
  writeFileSync(`${base}.onnx.partial`, model.onnx);
  writeFileSync(`${base}.json`, `${JSON.stringify(model.manifest, null, 2)}\n`);
  // Renamed into place so a reader never sees a half-written network.
  renameSync(`${base}.onnx.partial`, `${base}.onnx`);
  return `${base}.onnx`;
}
