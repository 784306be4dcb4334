// The model contract. A model is an ONNX file `<name>.onnx` with a manifest `<name>.json` next to it.
//
// Network contract (Cellpose's convention):
//   input  float32 [N, C, H, W]: C = manifest.channels, images normalised per channel to the
//          manifest's percentiles (see normalize.ts) and rescaled so cells have manifest.diameter px;
//          H and W may be fixed (= manifest.tileSize) or symbolic; symbolic means the network is
//          fully convolutional and takes any multiple of tileSize's power-of-two factor (up to 32),
//          and the engine then runs it on tiles up to 1024 px (tiling.ts).
//   output float32 [N, 3, H, W]: (flow dY, flow dX, cell-probability logit); flows are FLOW_SCALE (5)
//          times the unit flows of flow-targets.ts.
// Any ONNX that honours this can be served, e.g. a Cellpose-SAM export where its licence allows.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import * as ort from "onnxruntime-node";
import { z } from "zod";
import { ModelError } from "./faults.ts";
import { MODALITIES } from "../../schema/modality.ts";

/** The manifest's `input` of a model that reads colour made for the image's modality. */
export const MODALITY_COLOUR = "modality-colour";

/** The manifest `<name>.json`. */
export const ModelManifest = z.object({
  /** Model name, e.g. "cpsam". */
  name: z.string().min(1),
  /** Version of these weights, e.g. "1.0.0" or a date. */
  version: z.string().min(1),
  /**
   * What a public model is for, in a sentence or two, with no figures (they are dated in
   * docs/models.md): GET /models shows it (npm run models:describe writes it where the worker reads it).
   */
  description: z.string().optional(),
  /** Input channels C the network takes; images are mapped to these with `channels` selection. */
  channels: z.number().int().min(1).max(16),
  /**
   * What the network's channels hold. Absent: one channel made for the image's modality when
   * `channels` is 1, else the selected (or first) channels as they are. "modality-colour" (only
   * with 3 channels): three planes made for the image's modality, so a stain's colour reaches the
   * network while nuclei stay bright (model-input.ts).
   */
  input: z.literal(MODALITY_COLOUR).optional(),
  /** Square tile side the network runs on (Cellpose: 256). */
  tileSize: z.number().int().min(16).max(4096),
  /** Mean cell diameter (px) of the training data; images are rescaled by diameter / this. */
  diameter: z.number().positive(),
  /**
   * Median object diameter (px, in the images' own pixels) of the labels a fine-tuned model learned
   * from. With diameter "auto" it replaces the guess from image statistics: the user's images of the
   * same kind have objects of that size (Cellpose keeps the same figure, diam_labels, with a custom model).
   */
  trainedObjectDiameter: z.number().positive().optional(),
  /**
   * Per input modality, the diameter in µm of the objects this model learned (the model card says
   * how it was measured). With diameter "auto" on an image whose pixel size is known (the file's
   * trusted calibration or the request's pixel_size_um), the image runs at that size in its own
   * pixels (diameter-basis.ts); the estimate from image statistics is left for images without one.
   */
  objectDiameterUm: z.partialRecord(z.enum(MODALITIES), z.number().positive().max(1000)).optional(),
  /**
   * Peak learning rate for fine-tuning this network (absent: the trainer's FINE_TUNE_PEAK_LEARNING_RATE),
   * chosen by measurement: a network whose own training ended at a low rate is knocked off its
   * optimum by a rate that suits a smaller one (the model card says how it was chosen).
   */
  fineTuneLearningRate: z.number().positive().max(0.1).optional(),
  /** Per-channel percentile normalisation applied before the network. */
  normalization: z.object({ lower: z.number().min(0).max(100), upper: z.number().min(0).max(100) }).default({ lower: 1, upper: 99 }),
  /**
   * Mask parameters this network works best with, per input modality, chosen by measurement (the
   * model card says how); a request's own parameters override them, and parameters named nowhere
   * keep Cellpose's defaults (masks/compute-masks.ts).
   */
  maskDefaults: z
    .partialRecord(
      z.enum(MODALITIES),
      z
        .object({ cellprobThreshold: z.number().min(-20).max(20), flowThreshold: z.number().min(0).max(10), minSize: z.number().int().min(0) })
        .partial()
        .strict(),
    )
    .optional(),
  /** Where the weights come from: how trained, on what, under which licence. */
  provenance: z.object({
    source: z.string(),
    license: z.string().optional(),
    trainedOn: z.array(z.string()).optional(),
    createdAt: z.string().optional(),
    notes: z.string().optional(),
  }),
});
export type ModelManifest = z.infer<typeof ModelManifest>;

/** What the engine needs to know to make a model's input (model-input.ts). */
export type ModelReads = Pick<ModelManifest, "channels" | "input">;

/** A colour model reads three planes made for the image's modality: its manifest must say 3 channels. */
function inputProblem(manifest: ModelReads): string | undefined {
  if (manifest.input === MODALITY_COLOUR && manifest.channels !== 3)
    return `input "${MODALITY_COLOUR}" needs channels 3 (the model reads three planes), the manifest says ${manifest.channels}`;
  return undefined;
}

export type ExecutionProvider = "cuda" | "webgpu" | "cpu";
export type ExecutionProviderChoice = ExecutionProvider | "auto";

export interface LoadedModel {
  manifest: ModelManifest;
  session: ort.InferenceSession;
  executionProvider: ExecutionProvider;
  inputName: string;
  outputName: string;
  /** H and W are symbolic in the ONNX: the engine runs tiles larger than tileSize (tiling.ts). */
  anyInputSize: boolean;
}

interface SessionOptions {
  /** "auto" (default): CUDA if its libraries load, else WebGPU if it initialises, else CPU. */
  executionProvider?: ExecutionProviderChoice;
  /** onnxruntime's intra-op threads (inter-op: one); default: onnxruntime's choice. */
  threads?: number;
  /** Where the provider choice and fall-backs are reported (default: console.error). */
  log?: (message: string) => void;
}

/** Loads `<path>.onnx` and its manifest `<path>.json` (path may end in .onnx or not). */
export async function loadModel(path: string, options: SessionOptions = {}): Promise<LoadedModel> {
  const base = path.endsWith(".onnx") ? path.slice(0, -5) : path;
  let manifestText: string;
  let onnx: Uint8Array;
  try {
    manifestText = await readFile(`${base}.json`, "utf8");
  } catch {
    throw new ModelError(`model manifest ${base}.json not found (a model is <name>.onnx plus <name>.json)`);
  }
  try {
    onnx = new Uint8Array(await readFile(`${base}.onnx`));
  } catch {
    throw new ModelError(`model file ${base}.onnx not found`);
  }
  return loadModelFromBytes(onnx, parseManifest(manifestText, `${base}.json`), options);
}

export function parseManifest(text: string, where = "manifest"): ModelManifest {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ModelError(`${where} is not valid JSON: ${(error as Error).message}`);
  }
  const parsed = ModelManifest.safeParse(json);
  if (!parsed.success) throw new ModelError(`${where} is not a valid model manifest: ${z.prettifyError(parsed.error)}`);
  if (parsed.data.normalization.lower >= parsed.data.normalization.upper) throw new ModelError(`${where}: normalization.lower must be below upper`);
  const problem = inputProblem(parsed.data);
  if (problem) throw new ModelError(`${where}: ${problem}`);
  return parsed.data;
}

/**
 * onnxruntime-node's CUDA provider lives in libraries its installer adds only when asked
 * (ONNXRUNTIME_NODE_INSTALL=cuda12). Without them, asking for CUDA makes onnxruntime print a
 * loader error before failing; look for the files first and skip CUDA quietly.
 */
function cudaFilesInstalled(): boolean {
  try {
    const root = dirname(createRequire(import.meta.url).resolve("onnxruntime-node/package.json"));
    const bin = join(root, "bin");
    for (const napi of readdirSync(bin)) {
      if (existsSync(join(bin, napi, process.platform, process.arch, "libonnxruntime_providers_cuda.so"))) return true;
    }
  } catch {
    // an unusual layout: let onnxruntime itself decide
    return true;
  }
  return false;
}

// Exported for its test only (test/engine/model.test.ts).
/**
 * onnxruntime-node's WebGPU provider (Dawn) draws on Vulkan on Linux. Without the Vulkan loader,
 * trying it prints "Warning: Couldn't load Vulkan: libvulkan.so.1 ..." and a C++ source line to
 * the terminal before failing, on every start of a machine without a GPU: where the loader is not
 * found (the dynamic linker's cache, LD_LIBRARY_PATH, the usual library folders), "auto" skips
 * WebGPU quietly and says why in the model's one log line. Other systems (Metal, Direct3D) are
 * left to onnxruntime.
 */
export function vulkanLoaderFound(): boolean {
  if (process.platform !== "linux") return true;
  const name = "libvulkan.so.1";
  try {
    if (readFileSync("/etc/ld.so.cache").includes(name)) return true;
  } catch {
    // no cache: look in the folders
  }
  const folders = [
    ...(process.env.LD_LIBRARY_PATH ?? "").split(":").filter(Boolean),
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/lib/x86_64-linux-gnu",
    "/lib64",
    "/usr/local/lib",
  ];
  return folders.some((folder) => existsSync(join(folder, name)));
}

/**
 * onnxruntime's CPU thread pool busy-waits between parallel sections by default. On a machine
 * shared with other work that burns cores others need: a 1024x1024 cpsam call took 20-25 % less
 * CPU without it, and no longer (measured interleaved on the loaded 2-core dev machine).
 */
const NO_SPINNING = { session: { intra_op: { allow_spinning: "0" }, inter_op: { allow_spinning: "0" } } };

/**
 * An onnxruntime session of `onnx` on the first provider of `choice` that initialises ("auto":
 * CUDA if its files are installed, else WebGPU, else CPU), and why the ones before it did not.
 * Inference and training sessions both start here, so a runner trains where it segments.
 */
export async function sessionOnProvider(
  onnx: Uint8Array,
  choice: ExecutionProviderChoice,
  options: ort.InferenceSession.SessionOptions = {},
): Promise<{ session: ort.InferenceSession; provider: ExecutionProvider; skipped: string[] }> {
  const candidates: ExecutionProvider[] = choice === "auto" ? ["cuda", "webgpu", "cpu"] : [choice];
  const skipped: string[] = [];
  for (const provider of candidates) {
    if (provider === "cuda" && choice === "auto" && !cudaFilesInstalled()) {
      skipped.push("cuda unavailable: its onnxruntime-node files are not installed (ONNXRUNTIME_NODE_INSTALL=cuda12 npm ci)");
      continue;
    }
    if (provider === "webgpu" && choice === "auto" && !vulkanLoaderFound()) {
      skipped.push("webgpu unavailable: no Vulkan loader (libvulkan.so.1) on this machine");
      continue;
    }
    try {
      const session = await ort.InferenceSession.create(onnx, {
        graphOptimizationLevel: "all",
        extra: NO_SPINNING,
        ...options,
        executionProviders: [provider],
      });
      return { session, provider, skipped };
    } catch (error) {
      skipped.push(`${provider} unavailable: ${firstLine((error as Error).message)}`);
    }
  }
  throw new ModelError(`no execution provider could load the model: ${skipped.join("; ")}`);
}

export async function loadModelFromBytes(onnx: Uint8Array, manifest: ModelManifest, options: SessionOptions = {}): Promise<LoadedModel> {
  const log = options.log ?? ((message: string) => console.error(message));
  const threads = options.threads ? { intraOpNumThreads: options.threads, interOpNumThreads: 1 } : {};
  const { session, provider, skipped } = await sessionOnProvider(onnx, options.executionProvider ?? "auto", threads);
  // The contract is the model's, not the provider's: a breach is no reason to try another.
  const model = checkContract(session, manifest, provider);
  log(`[engine] model ${manifest.name}@${manifest.version} on ${provider}${skipped.length ? ` (${skipped.join("; ")})` : ""}`);
  return model;
}

function checkContract(session: ort.InferenceSession, manifest: ModelManifest, provider: ExecutionProvider): LoadedModel {
  const problem = inputProblem(manifest);
  if (problem) throw new ModelError(`model manifest: ${problem}`);
  if (session.inputNames.length !== 1 || session.outputNames.length < 1) {
    throw new ModelError(`model must have one input and at least one output; has ${session.inputNames.length} and ${session.outputNames.length}`);
  }
  const input = session.inputMetadata[0];
  if (input?.isTensor && input.type !== "float32") throw new ModelError(`model input must be float32, is ${input.type}`);
  if (input?.isTensor) {
    const c = input.shape[1];
    if (input.shape.length !== 4) throw new ModelError(`model input must be [N, C, H, W], has rank ${input.shape.length}`);
    if (typeof c === "number" && c !== manifest.channels) throw new ModelError(`model input has ${c} channels, manifest says ${manifest.channels}`);
  }
  const symbolic = (dim: unknown) => typeof dim !== "number" || dim < 0;
  const anyInputSize = !!input && input.isTensor && symbolic(input.shape[2]) && symbolic(input.shape[3]);
  return { manifest, session, executionProvider: provider, inputName: session.inputNames[0]!, outputName: session.outputNames[0]!, anyInputSize };
}

function firstLine(text: string): string {
  return text.split("\n")[0]!.slice(0, 200);
}
