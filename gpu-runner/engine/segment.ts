// The engine's entry point: a decoded image and a loaded model in; labels, ROIs with measurements,
// confluency and per-stage timings out. The runner calls exactly segmentImage.
import type { Roi } from "../../schema/roi.ts";
import type { DecodedImage } from "./decode/index.ts";
import { runNetwork } from "./inference.ts";
import { computeMasks, DEFAULT_MASK_PARAMS, type MaskParams } from "./masks/compute-masks.ts";
import type { LoadedModel } from "./model.ts";
import { normalizeImage } from "./normalize.ts";
import { resizePlanar } from "./resize.ts";
import { confluency, measureRois } from "./rois.ts";

export interface SegmentParams extends MaskParams {
  /** Mean cell diameter in this image (px); the image is rescaled by model diameter / this. Default: the model's. */
  diameter: number | undefined;
  /** Image channels fed to the model's channels, in order (default: the first ones; missing ones are zero). */
  channels: number[] | undefined;
  /** Tiles per network call. */
  batchSize: number;
  /** Minimum tile overlap as a fraction of the tile. */
  tileOverlap: number;
}

export const DEFAULT_SEGMENT_PARAMS: SegmentParams = { ...DEFAULT_MASK_PARAMS, diameter: undefined, channels: undefined, batchSize: 8, tileOverlap: 0.1 };

export type SegmentStage = "normalize" | "rescale" | "network" | "masks" | "rois";

export interface SegmentResult {
  width: number;
  height: number;
  /** Label image, row-major; 0 = background, roi.index + 1 = that ROI. */
  labels: Uint32Array;
  rois: Roi[];
  /** Foreground fraction. */
  confluency: number;
  /** Milliseconds per stage. */
  timings: Record<SegmentStage, number>;
}

/** Largest factor by which an image may be enlarged for the network (diameter much smaller than the model's). */
const MAX_UPSCALE_PIXELS = 2 ** 28;

export async function segmentImage(image: DecodedImage, model: LoadedModel, params: Partial<SegmentParams> = {}, onProgress?: (fraction: number, stage: string) => void): Promise<SegmentResult> {
  const p: SegmentParams = { ...DEFAULT_SEGMENT_PARAMS, ...params };
  validate(p);
  const { width, height } = image;
  const manifest = model.manifest;
  const timings: Record<SegmentStage, number> = { normalize: 0, rescale: 0, network: 0, masks: 0, rois: 0 };
  let t = performance.now();
  const lap = (stage: SegmentStage) => { const now = performance.now(); timings[stage] += now - t; t = now; };
  const report = (fraction: number, stage: string) => onProgress?.(Math.min(1, Math.max(0, fraction)), stage);

  report(0, "normalize");
  // Large intermediates are held in `let`s and dropped as soon as they are used up, so peak memory
  // on big images stays near image + network outputs.
  let input: DecodedImage | undefined = modelInput(image, manifest.channels, p.channels);
  normalizeImage(input, manifest.normalization, input.data);
  lap("normalize");

  const scale = p.diameter === undefined ? 1 : manifest.diameter / p.diameter;
  const scaledWidth = Math.max(1, Math.round(width * scale));
  const scaledHeight = Math.max(1, Math.round(height * scale));
  if (scaledWidth * scaledHeight * manifest.channels > MAX_UPSCALE_PIXELS) {
    throw new Error(`diameter ${p.diameter} would rescale the image to ${scaledWidth}x${scaledHeight}, too large`);
  }
  let networkInput: Float32Array | undefined = scale === 1 ? input.data : resizePlanar(input.data, manifest.channels, width, height, scaledWidth, scaledHeight);
  input = undefined;
  lap("rescale");

  report(0.05, "network");
  let scaled: Float32Array | undefined = await runNetwork(networkInput, manifest.channels, scaledWidth, scaledHeight, model, {
    batchSize: p.batchSize,
    overlap: p.tileOverlap,
    onProgress: (f) => report(0.05 + 0.75 * f, "network"),
  });
  networkInput = undefined;
  lap("network");
  // Masks are computed at the image's own resolution, as Cellpose resizes flows back before dynamics.
  const outputs = scale === 1 ? scaled : resizePlanar(scaled, 3, scaledWidth, scaledHeight, width, height);
  scaled = undefined;
  lap("rescale");

  report(0.8, "masks");
  const plane = width * height;
  const { labels, count } = computeMasks(outputs.subarray(0, 2 * plane), outputs.subarray(2 * plane), width, height, p);
  lap("masks");
  report(0.95, "rois");
  const rois = measureRois(labels, width, height, count);
  const result: SegmentResult = { width, height, labels, rois, confluency: confluency(labels), timings };
  lap("rois");
  report(1, "done");
  return result;
}

/** The image's channels mapped onto the model's: selected or first ones, zeros where missing. */
function modelInput(image: DecodedImage, modelChannels: number, selection: number[] | undefined): DecodedImage {
  const chosen = selection ?? Array.from({ length: Math.min(modelChannels, image.channels) }, (_, i) => i);
  if (chosen.length > modelChannels) throw new Error(`${chosen.length} channels selected, the model takes ${modelChannels}`);
  for (const c of chosen) if (!Number.isInteger(c) || c < 0 || c >= image.channels) throw new Error(`channel ${c} does not exist (image has ${image.channels})`);
  const plane = image.width * image.height;
  const data = new Float32Array(modelChannels * plane);
  chosen.forEach((c, k) => data.set(image.data.subarray(c * plane, (c + 1) * plane), k * plane));
  return { ...image, channels: modelChannels, data };
}

function validate(p: SegmentParams): void {
  const problems: string[] = [];
  if (p.diameter !== undefined && !(p.diameter > 0 && Number.isFinite(p.diameter))) problems.push("diameter must be a positive number");
  if (!Number.isFinite(p.cellprobThreshold)) problems.push("cellprobThreshold must be a number");
  if (!(p.flowThreshold >= 0)) problems.push("flowThreshold must be >= 0");
  if (!(Number.isInteger(p.minSize) && p.minSize >= 0)) problems.push("minSize must be a non-negative integer");
  if (!(p.maxSizeFraction > 0 && p.maxSizeFraction <= 1)) problems.push("maxSizeFraction must be in (0, 1]");
  if (!(Number.isInteger(p.niter) && p.niter >= 0 && p.niter <= 10_000)) problems.push("niter must be an integer in 0..10000");
  if (!(Number.isInteger(p.batchSize) && p.batchSize >= 1 && p.batchSize <= 256)) problems.push("batchSize must be an integer in 1..256");
  if (!(p.tileOverlap >= 0 && p.tileOverlap < 0.5)) problems.push("tileOverlap must be in [0, 0.5)");
  if (problems.length) throw new Error(`invalid segmentation parameters: ${problems.join("; ")}`);
}
