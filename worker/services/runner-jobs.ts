// What a runner receives with a leased job (inputs and outputs as signed URLs) and how its
// result is recorded. Completing is idempotent: the output ids were fixed at submission, the
// result rows are unique per job, and the job's COMPLETED state is reported as success again.
import type { z } from "zod";
import { getTableColumns, sql } from "drizzle-orm";
import { SQLiteAsyncDialect, type SQLiteTable } from "drizzle-orm/sqlite-core";
import { jobs, models, segmentations } from "../../schema/db.ts";
import type {
  BlockPlan,
  BlockResult,
  completeBody,
  LeasedJob,
  LeasedPrediction,
  MeasurementResult,
  PredictionResult,
  PreviewResult,
  TrainingResult,
} from "../../schema/internal-api.ts";
import type { Bindings } from "../env.ts";
import { HttpError } from "../errors.ts";
import { getImage, type Image } from "./images.ts";
import { type LeaseOptions, leaseNextJob } from "./job-leasing.ts";
import { sweepStorageNowAndThen } from "./storage-sweeper.ts";
import { completeStatement, failAttempt, getJobById, isLeaseToken, type Job, JobFaultError, leaseIdOf, timeLeftSeconds, withdrawAttempt } from "./jobs.ts";
import { getVisibleModel, type Model } from "./models.ts";
import { signStorageUrl, type StorageTarget } from "./signed-urls.ts";
import { trainingInput, trainingLabels, trainingSummary } from "./trainings.ts";
import { learnedNothing, unverified } from "../../schema/training-outcome.ts";
import type { TrainingMetrics } from "../../schema/api-records.ts";
import { blocksOf, completeBlock, planBlockTasks, removeBlockParts } from "./block-tasks.ts";
import {
  artifactIndexKey,
  artifactKey,
  blockPartKey,
  blockPartsPrefix,
  imageFullManifestKey,
  imageFullTilesKey,
  imageFullTilesPrefix,
  imagePreviewKey,
  measuredArtifactKey,
  MODEL_FILES,
  trainedModelPrefix,
} from "../../schema/storage-keys.ts";
import { getSegmentation } from "./segmentations.ts";

function modelFiles(env: Bindings, origin: string, prefix: string, method: "GET" | "PUT", lease?: StorageTarget["lease"]) {
  return Promise.all(
    (Object.entries(MODEL_FILES) as [keyof typeof MODEL_FILES, string][]).map(
      async ([k, file]) => [k, await signStorageUrl(env, origin, { method, key: prefix + file, lease })] as const,
    ),
  ).then(Object.fromEntries) as Promise<Record<keyof typeof MODEL_FILES, string>>;
}

async function modelPayload(env: Bindings, origin: string, model: Model) {
  return { id: model.id, name: model.name, version: model.version, files: await modelFiles(env, origin, model.r2Prefix, "GET") };
}

/**
 * Everything the runner needs for one attempt; URLs expire, so a runner may ask again. An input
 * that is gone (its image or model deleted, its labels missing) is a JobFaultError: no attempt can
 * ever have it.
 */
export async function runnerPayload(env: Bindings, origin: string, job: Job): Promise<LeasedJob> {
  // A block runs within its prediction's time limit.
  const parent = job.kind === "block" ? await getJobById(env.DB, job.parentJobId!) : null;
  if (job.kind === "block" && parent?.status !== "STARTED") throw new JobFaultError("input", "Its prediction ended before this block was done");
  const timed = parent ?? job;
  const timeLeft = timeLeftSeconds(timed);
  const granted = {
    job_id: job.id,
    attempt: job.attempts,
    lease_token: job.leaseToken!,
    lease_expires_at: job.leaseExpiresAt!,
    ...(timeLeft !== null && { time_limit: { seconds: timed.timeLimitSeconds!, left_seconds: timeLeft } }),
  };
  /** Outputs are written only while this lease is the job's live one. */
  const lease = { jobId: job.id, id: await leaseIdOf(job.leaseToken!) };
  const previewUrl = () => signStorageUrl(env, origin, { method: "PUT", key: imagePreviewKey(job.orgId, job.imageId!), lease });
  const imageInput = async (id: string) => {
    const image = await getImage(env.DB, job.orgId, id);
    if (image?.status !== "ready") throw new JobFaultError("input", `Image ${id} was deleted before the job could run`);
    return {
      id: image.id,
      name: image.name,
      format: image.format,
      width: image.width,
      height: image.height,
      channels: image.channels,
      channel_names: image.channelNames ?? null,
      pixel_size_um: image.pixelSizeXUm !== null && image.pixelSizeYUm !== null ? { x: image.pixelSizeXUm, y: image.pixelSizeYUm } : null,
      url: await signStorageUrl(env, origin, { method: "GET", key: image.r2Key }),
    };
  };
  if (job.kind === "preview") return { ...granted, kind: "preview", image: await imageInput(job.imageId!), output: { preview_url: await previewUrl() } };
  if (job.kind === "measurement") {
    const segmentation = await getSegmentation(env.DB, job.orgId, job.segmentationId!);
    if (!segmentation) throw new JobFaultError("input", `Segmentation ${job.segmentationId} was deleted before it could be measured`);
    return {
      ...granted,
      kind: "measurement",
      image: await imageInput(job.imageId!),
      rois: { segmentation_id: segmentation.id, artifact_url: await signStorageUrl(env, origin, { method: "GET", key: segmentation.artifactKey }) },
      output: { artifact_url: await signStorageUrl(env, origin, { method: "PUT", key: measuredArtifactKey(job.orgId, segmentation.id), lease }) },
    };
  }
  const model = await getVisibleModel(env.DB, job.orgId, job.modelId!);
  if (!model) throw new JobFaultError("input", `Model ${job.modelId} was deleted before the job could run`);
  const base = { ...granted, model: await modelPayload(env, origin, model) };
  // The image's preview is made once, by whichever job decodes the image first (a block-wise
  // prediction's blocks each give their share, which its merge sums).
  const hasPreview = async () => (await env.BUCKET.head(imagePreviewKey(job.orgId, job.imageId!))) !== null;
  // Its full-resolution level likewise, by the first fanned-out prediction whose plan fixed a display
  // stretch: each block writes its core's tile pack, the merge the manifest naming them.
  const fullWanted = async (plan: BlockPlan | undefined) =>
    plan?.display !== undefined && !(await env.BUCKET.head(imageFullManifestKey(job.orgId, job.imageId!)));
  const predictionOf = parent ?? job;
  const params = (predictionOf.input as { params?: LeasedPrediction["params"] } | null)?.params ?? {};
  const blockPlan = (predictionOf.input as { block_plan?: BlockPlan } | null)?.block_plan;
  if (job.kind === "block") {
    const partUrl = (part: "cells" | "preview") =>
      signStorageUrl(env, origin, { method: "PUT", key: blockPartKey(job.orgId, job.segmentationId!, job.blockIndex!, part), lease });
    return {
      ...base,
      kind: "block",
      prediction_id: parent!.id,
      params,
      image: await imageInput(job.imageId!),
      plan: blockPlan!,
      block: { index: job.blockIndex!, total: parent!.blocksTotal! },
      output: {
        cells_url: await partUrl("cells"),
        ...(!(await hasPreview()) && { preview_url: await partUrl("preview") }),
        ...((await fullWanted(blockPlan)) && {
          full_url: await signStorageUrl(env, origin, {
            method: "PUT",
            key: imageFullTilesKey(job.orgId, job.imageId!, blockPlan!.core_side, job.blockIndex!),
            lease,
          }),
        }),
      },
    };
  }
  if (job.kind === "prediction") {
    const previewWanted = !(await hasPreview());
    return {
      ...base,
      kind: "prediction",
      params,
      image: await imageInput(job.imageId!),
      output: {
        segmentation_id: job.segmentationId!,
        artifact_url: await signStorageUrl(env, origin, { method: "PUT", key: artifactKey(job.orgId, job.segmentationId!), lease }),
        ...(previewWanted && { preview_url: await previewUrl() }),
      },
      ...(blockPlan &&
        job.blocksTotal !== null && {
          merge: await mergeInput(env, origin, job, blockPlan, { preview: previewWanted, full: await fullWanted(blockPlan), lease }),
        }),
    };
  }
  const input = trainingInput(job);
  const examples = [];
  for (const { imageId, labels } of await trainingLabels(env, job)) {
    examples.push({
      image: await imageInput(imageId),
      labels: { segmentation_id: labels.id, artifact_url: await signStorageUrl(env, origin, { method: "GET", key: labels.artifactKey }) },
    });
  }
  return {
    ...base,
    kind: "training",
    training: {
      examples,
      steps: input.steps,
      ...(input.max_seconds && { max_seconds: input.max_seconds }),
      ...(input.seed !== undefined && { seed: input.seed }),
    },
    output: { model_id: job.resultModelId!, files: await modelFiles(env, origin, trainedModelPrefix(job.resultModelId!), "PUT", lease) },
  };
}

/**
 * What the merge of a block-wise prediction reads: its blocks' parts in grid order (their preview
 * shares only where every block wrote one) and their results summed; and where the image's
 * full-resolution manifest goes, when it is wanted and every block wrote its tile pack.
 */
async function mergeInput(
  env: Bindings,
  origin: string,
  job: Job,
  plan: BlockPlan,
  wanted: { preview: boolean; full: boolean; lease: StorageTarget["lease"] },
): Promise<NonNullable<LeasedPrediction["merge"]>> {
  const blocks = await blocksOf(env, job);
  if (blocks.length !== job.blocksTotal || blocks.some((b) => b.status !== "COMPLETED")) {
    throw new JobFaultError("service", `only ${blocks.filter((b) => b.status === "COMPLETED").length} of ${job.blocksTotal} blocks are done`);
  }
  const results = blocks.map((b) => b.result as BlockResult);
  const timings: Record<string, number> = {};
  for (const result of results) for (const [stage, ms] of Object.entries(result.timings ?? {})) timings[stage] = (timings[stage] ?? 0) + ms;
  const get = (block: Job, part: "cells" | "preview") =>
    signStorageUrl(env, origin, { method: "GET", key: blockPartKey(job.orgId, job.segmentationId!, block.blockIndex!, part) });
  // One listing (a thousand keys a call) rather than a HEAD per block: a slide's thousands of blocks
  // would pass a request's subrequest limit.
  const stored = wanted.preview ? await storedKeys(env.BUCKET, blockPartsPrefix(job.orgId, job.segmentationId!)) : null;
  const previews = stored !== null && blocks.every((b) => stored.has(blockPartKey(job.orgId, job.segmentationId!, b.blockIndex!, "preview")));
  const packs = wanted.full ? await storedKeys(env.BUCKET, imageFullTilesPrefix(job.orgId, job.imageId!, plan.core_side)) : null;
  const full = packs !== null && blocks.every((b) => packs.has(imageFullTilesKey(job.orgId, job.imageId!, plan.core_side, b.blockIndex!)));
  const parts = [];
  for (const block of blocks) parts.push({ cells_url: await get(block, "cells"), ...(previews && { preview_url: await get(block, "preview") }) });
  return {
    plan,
    parts,
    ...(full && {
      full_manifest_url: await signStorageUrl(env, origin, { method: "PUT", key: imageFullManifestKey(job.orgId, job.imageId!), lease: wanted.lease }),
    }),
    kept_area: results.reduce((sum, r) => sum + r.kept_area, 0),
    glass_blocks: results.filter((r) => r.glass).length,
    timings,
    execution_providers: [...new Set(results.flatMap((r) => (r.execution_provider ? [r.execution_provider] : [])))],
  };
}

/** The keys stored under a prefix. */
async function storedKeys(bucket: R2Bucket, prefix: string): Promise<Set<string>> {
  const keys = new Set<string>();
  let cursor: string | undefined;
  do {
    const listing = await bucket.list({ prefix, cursor });
    for (const object of listing.objects) keys.add(object.key);
    cursor = listing.truncated ? listing.cursor : undefined;
  } while (cursor);
  return keys;
}

/**
 * Leases the next job and builds what its runner needs. A job whose payload cannot be built
 * because its inputs are gone is FAILED for good with that reason (not left to expire as "runner
 * stopped reporting"), and the next job is looked at; any other trouble building it withdraws the
 * lease without spending an attempt.
 */
export async function leaseWithPayload(env: Bindings, origin: string, holder: string, options: LeaseOptions): Promise<LeasedJob | null> {
  const deadline = Date.now() + options.waitMs;
  // Where no cron fires (`wrangler dev`), the runners' lease calls keep the storage sweeper going.
  await sweepStorageNowAndThen(env);
  for (;;) {
    const job = await leaseNextJob(env, holder, { ...options, waitMs: Math.max(0, deadline - Date.now()) });
    if (!job) return null;
    try {
      return await runnerPayload(env, origin, job);
    } catch (error) {
      if (!(error instanceof JobFaultError)) {
        await withdrawAttempt(env, job.id, job.leaseToken!);
        throw error;
      }
      await failAttempt(env, job.id, job.leaseToken!, error.message, error.fault);
    }
  }
}

/**
 * INSERT of a job's result row that only takes effect if the job is COMPLETED by then. Batched
 * after the completing UPDATE, so a completion that lost its lease records nothing.
 */
function insertIfJobCompleted(d1: D1Database, table: SQLiteTable, jobId: string, values: Record<string, unknown>): D1PreparedStatement {
  const columns = getTableColumns(table) as Record<string, { name: string }>;
  const entries = Object.entries(values).filter(([, v]) => v !== undefined);
  const names = sql.join(
    entries.map(([k]) => {
      const column = columns[k];
      if (!column) throw new Error(`${k} is not a column of the table`);
      return sql.identifier(column.name);
    }),
    sql`, `,
  );
  const params = sql.join(
    entries.map(([, v]) => sql`${v !== null && typeof v === "object" ? JSON.stringify(v) : v}`),
    sql`, `,
  );
  const query = new SQLiteAsyncDialect().sqlToQuery(sql`INSERT INTO ${table} (${names}) SELECT ${params}
    WHERE EXISTS (SELECT 1 FROM ${jobs} WHERE ${jobs.id} = ${jobId} AND ${jobs.status} = 'COMPLETED')
    ON CONFLICT DO NOTHING`);
  return d1.prepare(query.sql).bind(...query.params);
}

async function requireObject(bucket: R2Bucket, key: string, what: string): Promise<void> {
  if (!(await bucket.head(key))) throw new HttpError(400, `${what} was not uploaded (expected at the job's signed output URL)`);
}

/** A preview job records nothing but its result; an image deleted meanwhile takes its preview with it. */
async function completePreview(env: Bindings, job: Job, image: Image | null, body: z.infer<typeof completeBody>): Promise<Job> {
  const result = body.result as PreviewResult;
  if (!("preview_bytes" in result)) throw new HttpError(422, "A preview's result needs preview_bytes and levels");
  const key = imagePreviewKey(job.orgId, job.imageId!);
  if (!image) {
    await env.BUCKET.delete(key);
    throw new HttpError(409, `Image ${job.imageId} was deleted while its preview was being made`);
  }
  await requireObject(env.BUCKET, key, "The preview");
  const [completed] = await completeStatement(env.DB, job.id, body.lease_token, { result });
  if (completed) return completed;
  const now = (await getJobById(env.DB, job.id))!;
  if (now.status === "COMPLETED") return now;
  throw new HttpError(409, `Job ${job.id} is not held by this lease (it is ${now.status}); its result was not recorded`);
}

/**
 * A measurement's artifact replaces its import's, in the same batch that completes the job: the
 * segmentation then reads the measured ROIs, and the import's artifact and its index are removed.
 * A segmentation deleted meanwhile takes the measured artifact with it.
 */
async function completeMeasurement(env: Bindings, job: Job, body: z.infer<typeof completeBody>): Promise<Job> {
  const result = body.result as MeasurementResult;
  if (!("measured_rois" in result)) throw new HttpError(422, "A measurement's result needs measured_rois and channels");
  const measured = measuredArtifactKey(job.orgId, job.segmentationId!);
  const before = await getSegmentation(env.DB, job.orgId, job.segmentationId!);
  if (!before) {
    await env.BUCKET.delete(measured);
    throw new HttpError(409, `Segmentation ${job.segmentationId} was deleted while it was being measured`);
  }
  await requireObject(env.BUCKET, measured, "The measured ROI artifact");
  const complete = completeStatement(env.DB, job.id, body.lease_token, { result }).toSQL();
  const [completed] = await env.DB.batch([
    env.DB.prepare(complete.sql).bind(...complete.params),
    env.DB.prepare(
      `UPDATE segmentations SET artifact_key = ?1 WHERE id = ?2 AND org_id = ?3
         AND EXISTS (SELECT 1 FROM jobs WHERE id = ?4 AND status = 'COMPLETED' AND lease_token = ?5)`,
    ).bind(measured, before.id, job.orgId, job.id, body.lease_token),
  ]);
  const now = (await getJobById(env.DB, job.id))!;
  // D1's batch answers one result per statement, in order.
  if (completed!.results.length === 1 || (now.status === "COMPLETED" && (await isLeaseToken(now, body.lease_token)))) {
    // A deletion that swept the segmentation's prefix before the measured artifact arrived would miss it.
    if (!(await getSegmentation(env.DB, job.orgId, before.id))) await env.BUCKET.delete(measured);
    else if (before.artifactKey !== measured) await env.BUCKET.delete([before.artifactKey, artifactIndexKey(before.artifactKey)]);
    return now;
  }
  throw new HttpError(409, `Job ${job.id} is not held by this lease (it is ${now.status}); its result was not recorded`);
}

/** The pixel size a prediction's measurements use: its `pixel_size_um` parameter, else the image's. */
function segmentationPixelSize(job: Job, image: Image) {
  const given = (job.input as { params?: LeasedPrediction["params"] } | null)?.params?.pixel_size_um;
  if (given !== undefined) return { pixelSizeXUm: given, pixelSizeYUm: given, pixelSizeSource: "given" as const };
  return { pixelSizeXUm: image.pixelSizeXUm, pixelSizeYUm: image.pixelSizeYUm, pixelSizeSource: image.pixelSizeSource };
}

export async function completeJob(env: Bindings, job: Job, body: z.infer<typeof completeBody>): Promise<Job> {
  if ("block_plan" in body.result) return planBlockTasks(env, job, body.lease_token, body.result);
  if (job.kind === "block") {
    if (!("block_cells" in body.result)) throw new HttpError(422, "A block's result needs block_cells, kept_area and glass");
    return completeBlock(env, job, body.lease_token, body.result);
  }
  // The completing lease repeating itself (its answer was lost) hears success again; a late
  // attempt of the same job, whose lease ran out and was taken over, is refused.
  const held = await isLeaseToken(job, body.lease_token);
  if (job.status === "COMPLETED" && held) return job;
  if (job.status !== "STARTED" || !held) {
    throw new HttpError(409, `Job ${job.id} is not held by this lease (it is ${job.status}); its result was not recorded`);
  }
  const image = job.imageId ? await getImage(env.DB, job.orgId, job.imageId) : null;
  if (job.kind === "preview") return completePreview(env, job, image, body);
  if (job.kind === "measurement") return completeMeasurement(env, job, body);
  const model = await getVisibleModel(env.DB, job.orgId, job.modelId!);
  let recordResult: D1PreparedStatement;
  if (job.kind === "prediction") {
    const result = body.result as PredictionResult;
    if (!("roi_count" in result)) throw new HttpError(422, "A prediction's result needs roi_count, confluency, width and height");
    if (!image) throw new HttpError(409, `Image ${job.imageId} was deleted while it was being segmented`);
    const key = artifactKey(job.orgId, job.segmentationId!);
    await requireObject(env.BUCKET, key, "The ROI artifact");
    recordResult = insertIfJobCompleted(env.DB, segmentations, job.id, {
      id: job.segmentationId!,
      orgId: job.orgId,
      imageId: image.id,
      imageName: image.name,
      jobId: job.id,
      modelId: model?.id ?? job.modelId,
      modelName: model?.name ?? null,
      modelVersion: model?.version ?? null,
      source: "model",
      roiCount: result.roi_count,
      confluency: result.confluency,
      diameter: result.diameter ?? null,
      modality: result.modality?.modality ?? null,
      modalitySource: result.modality?.source ?? null,
      diameterSource: result.diameter_basis?.source ?? null,
      diameterReason: result.diameter_basis?.reason ?? null,
      width: result.width,
      height: result.height,
      ...segmentationPixelSize(job, image),
      artifactKey: key,
      timings: result.timings ?? null,
      createdAt: Date.now(),
    });
  } else {
    const result = body.result as TrainingResult;
    const prefix = trainedModelPrefix(job.resultModelId!);
    await requireObject(env.BUCKET, prefix + MODEL_FILES.onnx, "The trained model's ONNX file");
    await requireObject(env.BUCKET, prefix + MODEL_FILES.manifest, "The trained model's manifest");
    const input = trainingInput(job);
    recordResult = insertIfJobCompleted(env.DB, models, job.id, {
      id: job.resultModelId!,
      orgId: job.orgId,
      name: input.name ?? `${model?.name ?? "model"}-finetuned-${job.resultModelId!.slice(0, 8)}`,
      version: "1",
      description: trainedModelDescription(result.metrics, model?.name ?? job.modelId ?? "its base", input.image_ids.length),
      baseModelId: job.modelId,
      r2Prefix: prefix,
      training: trainingSummary(job, result),
      trainingJobId: job.id,
      createdAt: Date.now(),
    });
  }
  const complete = completeStatement(env.DB, job.id, body.lease_token, { result: body.result }).toSQL();
  // One D1 batch is one transaction: the job and its result row are recorded together or not at all.
  const [completed] = await env.DB.batch([env.DB.prepare(complete.sql).bind(...complete.params), recordResult]);
  const now = (await getJobById(env.DB, job.id))!;
  // D1's batch answers one result per statement, in order.
  if (completed!.results.length === 1 || (now.status === "COMPLETED" && (await isLeaseToken(now, body.lease_token)))) {
    if (job.blocksTotal !== null) await removeBlockParts(env, job);
    return now;
  }
  // Lost a race with another completion or a lease sweep.
  throw new HttpError(409, `Job ${job.id} is not held by this lease (it is ${now.status}); its result was not recorded`);
}

/** A trained model's description: what its training gave, in one line. */
function trainedModelDescription(metrics: TrainingMetrics | null | undefined, base: string, images: number): string {
  if (metrics && learnedNothing(metrics)) return `Same as its base ${base}: fine-tuning on ${images} image(s) did not beat it`;
  if (metrics && unverified(metrics))
    return `Unverified: fine-tuned from ${base} on ${images} image(s), scoring above it by what could be noise; compare the two before relying on it`;
  return `Fine-tuned from ${base} on ${images} image(s)`;
}
