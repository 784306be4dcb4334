// npm run average-weights -- --manifest <model.json> --out <dir> [--version V] <model.onnx|checkpoint.bin>...
// Averages the weights of several points of one training run, each an exported model or a
// checkpoint, into one model: stochastic weight averaging's idea (Izmailov et al. 2018, "Averaging
// Weights Leads to Wider Optima and Better Generalization"), applied after the run to the points
// it kept. The network has no batch normalisation, so the average needs no statistics recomputed.
// The manifest (input, diameter, mask defaults) is taken from --manifest; its provenance names the
// points averaged.
import { mkdirSync, readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { parseManifest } from "../engine/model.ts";
import type { NetworkConfig } from "../network/flow-network.ts";
import { buildInferenceModel } from "../network/inference-model.ts";
import { weightsFromModel } from "../network/weights-from-model.ts";
import { decodeCheckpoint } from "../training/checkpoint.ts";
import { writeModel } from "../training/model-export.ts";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    manifest: { type: "string" },
    out: { type: "string" },
    version: { type: "string" },
  },
});
if (!values.manifest || !values.out || positionals.length < 2) {
  console.error("usage: npm run average-weights -- --manifest <model.json> --out <dir> [--version V] <model.onnx|checkpoint.bin> <...> (two or more)");
  process.exit(2);
}

/** One point of the run: its network's shape, its weights and what it was (a step, where known). */
function readPoint(path: string): { network: NetworkConfig; params: Float32Array; label: string } {
  const bytes = new Uint8Array(readFileSync(path));
  if (path.endsWith(".onnx")) return { ...weightsFromModel(bytes), label: path };
  const state = decodeCheckpoint(bytes);
  return { network: state.config.network, params: state.params, label: `${path} (step ${state.step})` };
}

const points = positionals.map(readPoint);
const [first] = points;
const shape = (n: NetworkConfig) => `${n.inputChannels}:${n.widths.join(",")}`;
for (const point of points) {
  if (shape(point.network) !== shape(first!.network) || point.params.length !== first!.params.length)
    throw new Error(`${point.label} is a network of ${shape(point.network)}, not ${shape(first!.network)}: only points of one run can be averaged`);
}
const average = new Float32Array(first!.params.length);
for (const { params } of points) for (let i = 0; i < average.length; i++) average[i]! += params[i]! / points.length;

const manifest = parseManifest(readFileSync(values.manifest, "utf8"), values.manifest);
if (values.version) manifest.version = values.version;
manifest.provenance = {
  ...manifest.provenance,
  source: `${manifest.provenance.source}; the mean of the weights of ${points.map((p) => p.label).join(", ")}`,
  createdAt: new Date().toISOString(),
};
mkdirSync(values.out, { recursive: true });
const written = writeModel(values.out, { onnx: buildInferenceModel(first!.network, average), manifest });
console.log(`averaged ${points.length} points into ${written}`);
