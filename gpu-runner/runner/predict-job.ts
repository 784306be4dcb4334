// A prediction: fetch the image and model, segment, upload the ROI artifact, report the counts.
import { requestedDiameter } from "../../schema/api.ts";
import { diameterRefusal, expansionReachRefusal, predictionWorkRefusal, readCapBytes } from "../../schema/work-limits.ts";
import { type BlockPlan as BlockPlanWire, type LeasedPrediction, MAX_BLOCKS_PER_PREDICTION } from "../../schema/internal-api.ts";
import { encodeRoiArtifact, RoiArtifactAccumulator } from "../../common/roi-artifact/writer.ts";
import type { Roi } from "../../schema/roi.ts";
import { type BlockPlan, fitsOnePass, planBlocks, segmentInBlocks } from "../engine/blocks/segment-blocks.ts";
import { countedSource, type ImageRegions, openImageRegions } from "../../common/decode/region-reader.ts";
import { InputError } from "../engine/faults.ts";
import { attachCells } from "../engine/cell-expansion.ts";
import { attachIntensity, distinctChannels } from "../engine/intensity.ts";
import type { ModalityDecision } from "../engine/modality.ts";
import type { DiameterBasis } from "../../schema/diameter-basis.ts";
import { previewTiles } from "../engine/preview.ts";
import { PreviewReduction } from "../engine/preview-reduction.ts";
import { segmentImage, type SegmentParams } from "../engine/segment.ts";
import { fetchImage } from "./fetch-image.ts";
import { decodeInThread } from "./input-thread/input-thread.ts";
import { type JobContext, renewedImageUrl } from "./job-context.ts";

type PredictionParams = LeasedPrediction["params"];

/**
 * The API's parameter names (Cellpose's) to the engine's. A job without a diameter (or with 0) runs
 * at the model's object size in µm where the pixel size is known (the job's pixel_size_um, else the
 * file's trusted one, `filePixelSize`), and gets it estimated where not.
 * `channels` follows Cellpose ([segment, nucleus], 1-based, 0 = grayscale mean); the engine takes
 * 0-based channel indices, one per model channel.
 */
export function segmentParams(params: PredictionParams, modelChannels = 1, filePixelSize?: { x: number; y: number } | null): Partial<SegmentParams> {
  const out: Partial<SegmentParams> = { diameter: requestedDiameter(params.diameter) ?? "auto" };
  if (params.pixel_size_um !== undefined) out.pixelSize = { um: params.pixel_size_um, from: "the request" };
  else if (filePixelSize) out.pixelSize = { um: (filePixelSize.x + filePixelSize.y) / 2, from: "the file" };
  if (params.cellprob_threshold !== undefined) out.cellprobThreshold = params.cellprob_threshold;
  if (params.flow_threshold !== undefined) out.flowThreshold = params.flow_threshold;
  if (params.min_size !== undefined) out.minSize = params.min_size;
  if (params.niter !== undefined) out.niter = params.niter;
  if (params.augment !== undefined) out.augment = params.augment;
  if (params.modality !== undefined) out.modality = params.modality;
  const [segment, nucleus] = params.channels ?? [];
  if (segment !== undefined && segment > 0) {
    out.channels = [segment - 1];
    if (modelChannels > 1 && nucleus !== undefined && nucleus > 0) out.channels.push(nucleus - 1);
  }
  return out;
}

export async function concatChunks(chunks: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  let length = 0;
  for await (const chunk of chunks) {
    parts.push(chunk);
    length += chunk.length;
  }
  const out = new Uint8Array(length);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

export async function runPrediction(job: LeasedPrediction, ctx: JobContext) {
  const expansion = withinWorkLimits(job);
  const { width, height } = job.image;
  if (width !== null && height !== null && width * height > ctx.singlePassPixels) return runBlockwisePrediction(job, ctx, expansion);
  const started = performance.now();
  ctx.progress(0, "fetching");
  // The model's scale tells how large the network's input may grow (kept loaded for the next jobs).
  const model = await ctx.models.session(ctx.api, job.model);
  if (
    width !== null &&
    height !== null &&
    !fitsOnePass(width * height, requestedDiameter(job.params.diameter), model.manifest.diameter, ctx.singlePassPixels)
  ) {
    return runBlockwisePrediction(job, ctx, expansion);
  }
  const bytes = await fetchImage(ctx, job.image);
  ctx.checkpoint();
  const fetchedMs = performance.now() - started;

  ctx.progress(0.05, "decoding");
  const image = await decodeInThread(bytes, ctx.inputBudget);
  const decodedMs = performance.now() - started - fetchedMs;
  ctx.checkpoint();
  // The image's preview, while it has none; made before segmenting, which may normalise the pixels in place.
  // A preview that cannot be made (an extreme aspect ratio's index overflows) costs the viewer its
  // picture, never the segmentation.
  let preview: Uint8Array | null = null;
  try {
    if (job.output.preview_url) preview = previewTiles(image);
  } catch (error) {
    ctx.log(`[runner] ${job.job_id}: no preview (${(error as Error).message})`);
  }

  const params = segmentParams(job.params, model.manifest.channels, job.image.pixel_size_um);
  const missing = params.channels?.find((c) => c >= image.channels);
  if (missing !== undefined) throw new InputError(`params.channels asks for channel ${missing + 1}; the image has ${image.channels}`);
  const result = await segmentImage(image, model, params, {
    onProgress: (fraction, stage) => ctx.progress(0.1 + 0.8 * fraction, stage),
    signal: ctx.signal,
  });
  ctx.checkpoint();
  // The cells' intensities from the decoded pixels, which segmenting left as they were (the network
  // reads a normalised copy).
  const intensityStarted = performance.now();
  // A channel that repeats an earlier one (a gray image stored as RGB) is measured once.
  const measured = distinctChannels(image);
  attachIntensity(result.rois, measured.image, result.labels);
  const timings: Record<string, number> = { ...result.timings, intensity: performance.now() - intensityStarted };
  if (expansion) {
    const cellsStarted = performance.now();
    attachCells(result.rois, measured.image, result.labels, expansion.distance, expansion.sx, expansion.sy);
    timings.cells = performance.now() - cellsStarted;
  }

  const names = channelNames(job.image, image.channels).filter((_, c) => measured.kept.includes(c));
  const output = await uploadArtifact(job, ctx, result, result.rois, names, expansion !== null);
  if (preview && output.preview_url) await ctx.api.upload(output.preview_url, preview);
  return predictionResult(
    { ...result, timings },
    result.rois.length,
    { fetch: fetchedMs, decode: decodedMs, total: performance.now() - started },
    model.executionProvider,
  );
}

/**
 * The job's cell expansion (below), after refusing parameters past the work limits
 * (schema/work-limits.ts) as the input's fault, before anything is fetched. The worker refuses them
 * at submission; a job queued before a limit was lowered, or whose file gives a pixel size that
 * makes the expansion reach too far, ends here.
 */
export function withinWorkLimits(job: Pick<LeasedPrediction, "params" | "image">): ReturnType<typeof cellExpansion> {
  const { params, image } = job;
  const diameter = requestedDiameter(params.diameter);
  const refusal = diameterRefusal(diameter);
  if (refusal) throw new InputError(refusal);
  const pixels = image.width !== null && image.height !== null ? image.width * image.height : null;
  const priced = { diameter, augment: params.augment, niter: params.niter, flowThreshold: params.flow_threshold };
  const overWork = predictionWorkRefusal(pixels, priced);
  if (overWork) throw new InputError(overWork.msg);
  return cellExpansion(job);
}

/**
 * The job's cell expansion as a distance in the units of a pixel of sx × sy: micrometres with the
 * job's pixel_size_um or else the file's (the worker refuses µm without either), or pixels; null
 * when the job asks for none. One that reaches past MAX_EXPANSION_REACH_PX is the input's fault
 * (a file calibrated at 1e-4 µm makes 1 µm reach 10,000 px), refused before any work.
 */
function cellExpansion(job: Pick<LeasedPrediction, "params" | "image">): { distance: number; sx: number; sy: number } | null {
  const { cell_expansion_um: um, cell_expansion_px: px, pixel_size_um: given } = job.params;
  if (px !== undefined) {
    const refusal = expansionReachRefusal({ px });
    if (refusal) throw new InputError(refusal);
    return { distance: px, sx: 1, sy: 1 };
  }
  if (um === undefined) return null;
  const size = given !== undefined ? { x: given, y: given } : job.image.pixel_size_um;
  if (!size) throw new InputError("cell_expansion_um needs the pixel size: the image's file gives none and the job no pixel_size_um");
  const refusal = expansionReachRefusal({ um, pixelSize: size });
  if (refusal) throw new InputError(given !== undefined ? refusal : `${refusal}; the pixel size is the file's`);
  return { distance: um, sx: size.x, sy: size.y };
}

/** The names the artifact gives the image's channels: the file's (OME-XML, from the upload probe), else c0, c1, ... */
export function channelNames(image: Pick<LeasedPrediction["image"], "channel_names">, channels: number): string[] {
  const named = image.channel_names;
  return named && named.length === channels ? named : Array.from({ length: channels }, (_, c) => `c${c}`);
}

async function uploadArtifact(
  job: LeasedPrediction,
  ctx: JobContext,
  result: { width: number; height: number; confluency: number },
  rois: readonly Roi[],
  channels: string[],
  cells = false,
): Promise<LeasedPrediction["output"]> {
  ctx.progress(0.9, "uploading");
  // URLs signed at lease time may have expired during a long run: ask for fresh ones first.
  const { output } = (await ctx.api.urls(job)) as LeasedPrediction;
  const artifact = await concatChunks(
    encodeRoiArtifact(
      {
        imageWidth: result.width,
        imageHeight: result.height,
        confluency: result.confluency,
        modelName: job.model.name,
        modelVersion: job.model.version,
        channelNames: channels,
        cells,
      },
      rois,
    ),
  );
  await ctx.api.upload(output.artifact_url, artifact);
  return output;
}

/**
 * The preview summed from an image's parts, uploaded. As for a whole image, a preview that cannot
 * be made (an extreme aspect ratio) costs the viewer its picture, never the segmentation.
 */
export async function uploadSummedPreview(
  job: LeasedPrediction,
  ctx: JobContext,
  preview: PreviewReduction,
  display: Parameters<PreviewReduction["tiles"]>[0],
  url: string,
): Promise<void> {
  let tiles: Uint8Array | undefined;
  try {
    tiles = preview.tiles(display);
  } catch (error) {
    ctx.log(`[runner] ${job.job_id}: no preview (${(error as Error).message})`);
  }
  if (tiles) await ctx.api.upload(url, tiles);
}

/**
 * Whether any rectangle of the file can be read without decoding what comes before it: a TIFF's
 * tiles and strips are found through its offsets, a DICOM slide's frames through its offset
 * tables, an OME-Zarr's chunks through its ZIP directory; a PNG or JPEG is one stream.
 */
function readsAtRandom(regions: ImageRegions): boolean {
  return regions.format === "tiff" || regions.format === "dicom" || regions.format === "zarr";
}

/** The plan as the worker keeps it for the block tasks (schema/internal-api.ts blockPlan). */
function wirePlan(plan: BlockPlan): BlockPlanWire {
  const { survey } = plan;
  return {
    width: plan.width,
    height: plan.height,
    core_side: plan.coreSide,
    margin: plan.margin,
    rows: plan.grid.rows,
    columns: plan.grid.columns,
    diameter: plan.diameter,
    survey: {
      normalization: survey.normalization,
      ...(survey.diameter !== undefined && { diameter: survey.diameter }),
      ...(survey.modality && { modality: survey.modality }),
      ...(survey.diameterEstimate && { diameter_estimate: { ...survey.diameterEstimate } }),
      diameter_basis: survey.diameterBasis,
    },
    ...(survey.display && { display: survey.display.map(({ low, high }) => ({ low, high })) }),
  };
}

/**
 * An image too large for one pass: read by range requests a block at a time (the file is never
 * downloaded whole). A file read at random is surveyed and planned here, and its blocks become
 * block tasks that every free runner leases (block-job.ts), merged by the prediction's last attempt
 * (block-merge.ts); a file read in sequence is segmented block by block here. Either way the
 * preview is summed from the blocks as they are read, and the cells, not the pixels, are held until
 * the artifact is written, as its encoded chunks (RoiArtifactAccumulator).
 */
async function runBlockwisePrediction(job: LeasedPrediction, ctx: JobContext, expansion: ReturnType<typeof cellExpansion>) {
  const started = performance.now();
  ctx.progress(0, "opening");
  const [source, model] = await Promise.all([ctx.api.rangeSource(job.image.url, renewedImageUrl(job, ctx)), ctx.models.session(ctx.api, job.model)]);
  // Every byte read through the worker counts; past k x the file the job fails with the reason (work-limits.ts).
  const counted = countedSource(source, readCapBytes(source.size));
  const regions = await openImageRegions(counted);
  ctx.checkpoint();
  const openedMs = performance.now() - started;
  const params = segmentParams(job.params, model.manifest.channels, job.image.pixel_size_um);
  const missing = params.channels?.find((c) => c >= regions.channels);
  if (missing !== undefined) throw new InputError(`params.channels asks for channel ${missing + 1}; the image has ${regions.channels}`);
  if (readsAtRandom(regions)) {
    ctx.progress(0.01, "survey");
    const surveyStarted = performance.now();
    const plan = await planBlocks(regions, model, params, {
      memoryBudgetBytes: ctx.blockMemoryBytes,
      cellExpansion: expansion ?? undefined,
      signal: ctx.signal,
    });
    if (plan.grid.blocks.length > MAX_BLOCKS_PER_PREDICTION) {
      throw new InputError(`the image would be cut into ${plan.grid.blocks.length} blocks, past the ${MAX_BLOCKS_PER_PREDICTION} a prediction may have`);
    }
    return { block_plan: wirePlan(plan), timings: { open_ms: Math.round(openedMs), survey_ms: Math.round(performance.now() - surveyStarted) } };
  }
  // A file read in sequence (a PNG's one zlib stream) is segmented here, every block in turn: a block
  // task elsewhere would decode the stream from its start again. The cells are encoded into the
  // artifact's chunks as the blocks release them: held as bytes, not objects.
  const artifact = new RoiArtifactAccumulator({
    imageWidth: regions.width,
    imageHeight: regions.height,
    modelName: job.model.name,
    modelVersion: job.model.version,
    channelNames: channelNames(job.image, regions.channels),
    cells: expansion !== null,
  });
  // The image's preview, while it has none, from the blocks' pixels as they are read.
  const preview = job.output.preview_url ? new PreviewReduction(regions.width, regions.height, regions.channels) : undefined;
  const result = await segmentInBlocks(regions, model, params, {
    memoryBudgetBytes: ctx.blockMemoryBytes,
    onRead: (region, { read, core }) =>
      preview?.add(region, { x: read.x, y: read.y, from: { x: core.x - read.x, y: core.y - read.y, width: core.width, height: core.height } }),
    onCells: (cells) => {
      for (const cell of cells) artifact.add(cell);
    },
    onBlock: () => ctx.checkpoint(),
    onProgress: (fraction, stage) => ctx.progress(0.05 + 0.85 * fraction, stage),
    measureIntensity: true,
    cellExpansion: expansion ?? undefined,
    signal: ctx.signal,
  });
  ctx.progress(0.9, "uploading");
  const { output } = (await ctx.api.urls(job)) as LeasedPrediction;
  await ctx.api.upload(output.artifact_url, new Blob(artifact.finish(result.confluency) as Uint8Array<ArrayBuffer>[]));
  if (preview && output.preview_url) await uploadSummedPreview(job, ctx, preview, result.display, output.preview_url);
  const { read, ...stages } = result.timings;
  const timings = { fetch: openedMs, decode: read, total: performance.now() - started };
  const reported = predictionResult({ ...result, timings: stages }, artifact.roiCount, timings, model.executionProvider);
  // Bytes of the image read through ranged requests (the file's size x the times it was read).
  return { ...reported, timings: { ...reported.timings, read_bytes: counted.bytesRead, file_bytes: source.size } };
}

/** What a prediction reports: counts, size, the diameter it ran at (the job's or the estimate), and milliseconds per stage. */
export function predictionResult(
  result: {
    confluency: number;
    width: number;
    height: number;
    diameter: number;
    diameterBasis?: DiameterBasis;
    modality?: ModalityDecision;
    timings: Record<string, number>;
  },
  roiCount: number,
  around: { fetch: number; decode: number; total: number },
  executionProvider: string,
) {
  return {
    roi_count: roiCount,
    confluency: result.confluency,
    width: result.width,
    height: result.height,
    diameter: result.diameter,
    ...(result.diameterBasis && { diameter_basis: result.diameterBasis }),
    ...(result.modality ? { modality: result.modality } : {}),
    timings: {
      fetch_ms: Math.round(around.fetch),
      decode_ms: Math.round(around.decode),
      ...Object.fromEntries(Object.entries(result.timings).map(([stage, ms]) => [`${stage}_ms`, Math.round(ms)])),
      total_ms: Math.round(around.total),
    },
    execution_provider: executionProvider,
  };
}
