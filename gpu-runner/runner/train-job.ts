// A training job: fetch each image and the ROIs of its latest segmentation to a folder of its own,
// fine-tune the base model reading them from there as it needs them (decoding the image and
// rasterising the ROIs into labels each time, in the input thread: fine-tuning keeps only what its
// memory budget allows), upload the new model, report AP@0.5 and AP@0.75 of base and result and
// the evidence the guard kept or refused the fine-tuned weights on.
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LeasedTraining, TrainingResult } from "../../schema/internal-api.ts";
import type { TrainingMetrics } from "../../schema/api-records.ts";
import { DEFAULT_TRAINING_SEED, fineTune, type TrainingPairSource } from "../training/fine-tune.ts";
import type { EvidenceKind } from "../training/fine-tune-runs.ts";
import type { GainEvidence } from "../training/gain-evidence.ts";
import { fetchImage } from "./fetch-image.ts";
import { DownloadRefusedError } from "./internal-api.ts";
import { decodeInThread, labelsInThread } from "./input-thread/input-thread.ts";
import type { JobContext } from "./job-context.ts";

/**
 * An example's ROIs. An import's measurement replaces its ROI artifact when it completes
 * (worker/services/runner-jobs.ts), so a training leased just before that finds the URL it was
 * given gone (404): the job's fresh URLs point at the artifact the segmentation has now.
 */
/** How fine-tuning drew its judged part (fine-tune-runs.ts), as the training record names it. */
const EVALUATED_ON = {
  none: "none",
  training_images: "training_image",
  held_out_regions: "held_out_regions",
  rotated_regions: "rotated_regions",
} as const satisfies Record<EvidenceKind, TrainingMetrics["evaluated_on"]>;

// Exported for its test only (test/runner/training-labels-renewal.test.ts).
export async function downloadLabels(
  job: LeasedTraining,
  labels: LeasedTraining["training"]["examples"][number]["labels"],
  ctx: JobContext,
): Promise<Uint8Array> {
  try {
    return await ctx.api.download(labels.artifact_url);
  } catch (error) {
    if (!(error instanceof DownloadRefusedError && error.status === 404)) throw error;
    const fresh = ((await ctx.api.urls(job)) as LeasedTraining).training.examples.find((e) => e.labels.segmentation_id === labels.segmentation_id);
    if (!fresh) throw error;
    return ctx.api.download(fresh.labels.artifact_url);
  }
}

/** The guard's evidence as the API records it (schema/api-records.ts trainingEvidence). */
function evidenceRecord(e: GainEvidence, candidateStep: number) {
  return {
    images: e.images,
    objects: e.objects,
    tiles: e.tiles,
    min_objects: e.minObjects,
    fine_tuned_step: candidateStep,
    fine_tuned_ap50: e.apFineTuned,
    gain: e.gain,
    gain_low: e.low,
    gain_high: e.high,
    confidence: e.confidence,
    verdict: e.verdict,
  };
}

export async function runTraining(job: LeasedTraining, ctx: JobContext) {
  const folder = await mkdtemp(join(tmpdir(), "cellseg-training-"));
  try {
    return await trainFrom(folder, job, ctx);
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}

async function trainFrom(folder: string, job: LeasedTraining, ctx: JobContext) {
  const started = performance.now();
  const pairs: TrainingPairSource[] = [];
  const examples = job.training.examples;
  for (const [i, example] of examples.entries()) {
    ctx.progress((0.1 * i) / examples.length, "fetching");
    const [imageBytes, artifact] = await Promise.all([fetchImage(ctx, example.image), downloadLabels(job, example.labels, ctx)]);
    const imagePath = join(folder, `${i}.image`),
      labelsPath = join(folder, `${i}.rois`);
    await Promise.all([writeFile(imagePath, imageBytes), writeFile(labelsPath, artifact)]);
    pairs.push(async () => {
      const image = await decodeInThread(new Uint8Array(await readFile(imagePath)), ctx.inputBudget);
      const labels = await labelsInThread(new Uint8Array(await readFile(labelsPath)), image.width, image.height, example.image.name, ctx.inputBudget);
      return { image, labels };
    });
    ctx.checkpoint();
  }
  const base = await ctx.models.read(ctx.api, job.model);
  const fetchedMs = performance.now() - started;

  const steps = job.training.steps ?? undefined;
  // The plan's time bound caps either budget: the worker fails a training that runs past it.
  const maxSeconds = job.training.max_seconds;
  const budget = steps
    ? { steps, ...(maxSeconds && { seconds: maxSeconds }) }
    : { seconds: maxSeconds ? Math.min(ctx.trainingSeconds, maxSeconds) : ctx.trainingSeconds };
  const seed = job.training.seed ?? DEFAULT_TRAINING_SEED;
  const result = await fineTune({
    base,
    pairs,
    budget,
    seed,
    memoryBudgetBytes: ctx.trainingMemoryBytes,
    executionProvider: ctx.executionProvider,
    name: `${job.model.name}-finetuned`,
    version: "1",
    signal: ctx.signal,
    onProgress: ({ fraction }) => {
      ctx.progress(0.1 + 0.85 * fraction, "training");
      ctx.checkpoint();
    },
  });
  const { memory } = result;
  ctx.log(
    `training ${job.job_id}: ${result.steps} steps on ${result.executionProvider} at a peak learning rate of ${result.learningRate}, recipe ${result.recipe}; prepared images held at most ${Math.ceil(memory.peakBytes / 2 ** 20)} of ${Math.ceil(memory.budgetBytes / 2 ** 20)} MiB, ${memory.preparations} preparations for ${pairs.length} images`,
  );
  ctx.progress(0.95, "uploading");
  // The output URLs signed at lease time have long expired after a long training: ask for fresh ones.
  const { output } = (await ctx.api.urls(job)) as LeasedTraining;
  await ctx.api.upload(output.files.onnx, result.onnx);
  await ctx.api.upload(output.files.manifest, new TextEncoder().encode(JSON.stringify(result.manifest, null, 2)));
  const { validation } = result;
  return {
    steps: result.steps,
    seconds: result.seconds,
    metrics: {
      evaluated_on: EVALUATED_ON[validation.heldOutBy],
      evaluated_images: validation.judgedImages,
      ...(validation.heldOut > 0 && { evaluated_regions: validation.heldOut }),
      ...(validation.folds > 0 && { folds: validation.folds }),
      seed,
      base: { ap50: validation.apBefore ?? null, ap75: validation.ap75Before ?? null },
      fine_tuned: { ap50: validation.apAfter ?? null, ap75: validation.ap75After ?? null },
      chosen_step: validation.chosenStep,
      ...(validation.thenOnEverything > 0 && { steps_on_all_regions: validation.thenOnEverything }),
      note: validation.note,
      recipe: result.recipe,
      ...(validation.evidence && { evidence: evidenceRecord(validation.evidence, validation.candidateStep) }),
    },
    timings: { fetch_ms: Math.round(fetchedMs), train_ms: Math.round(result.seconds * 1000), total_ms: Math.round(performance.now() - started) },
  } satisfies TrainingResult;
}
