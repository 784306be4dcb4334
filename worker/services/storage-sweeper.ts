// The cron's storage sweeper: R2 objects that no record will ever point at, and uploads nobody
// will finish (resumable ones left pending, streamed ones whose request died). Bounded per run (the cron comes back every minute), and idempotent: deleting what
// is already gone is harmless, and each job or upload is marked once it is done.
import { and, eq, inArray, isNotNull, isNull, lt, sql } from "drizzle-orm";
import { images, jobs, uploadParts } from "../../schema/db.ts";
import type { Bindings } from "../env.ts";
import { database } from "../storage/database.ts";
import { deleteImage, deletePrefix, updateImage } from "./images.ts";
import { createConversionJob } from "./jobs.ts";
import { measuredArtifactKey, segmentationPrefix, trainedModelPrefix } from "../../schema/storage-keys.ts";

// Exported for its tests only (test/worker/interrupted-uploads.test.ts, test/worker/job-state-machine.test.ts).
/** A resumable upload not completed within this long is given up (R2 itself drops parts after 7 days). */
export const STALE_UPLOAD_MS = 24 * 60 * 60 * 1000;
// Exported for its test only (test/worker/interrupted-uploads.test.ts).
/** A streamed upload that stored no part for this long has lost its request (client or isolate gone). */
export const STALE_STREAM_MS = 60 * 60 * 1000;
const BATCH = 50;
/** The cron sweeps every minute; callers on a busier path sweep at most this often per isolate. */
const SWEEP_INTERVAL_MS = 60_000;
let lastSweep = 0;

/** Outputs the attempts of FAILED jobs wrote: everything under a prediction's segmentation prefix, a training's model files, a measurement's artifact. */
async function clearFailedOutputs(env: Bindings, now: number): Promise<number> {
  const db = database(env.DB);
  const failed = await db
    .select()
    .from(jobs)
    .where(and(eq(jobs.status, "FAILED"), inArray(jobs.kind, ["prediction", "training", "measurement"]), isNull(jobs.outputsClearedAt)))
    .limit(BATCH);
  for (const job of failed) {
    if (job.kind === "prediction" && job.segmentationId) await deletePrefix(env.BUCKET, segmentationPrefix(job.orgId, job.segmentationId));
    if (job.kind === "training" && job.resultModelId) await deletePrefix(env.BUCKET, trainedModelPrefix(job.resultModelId));
    // A measurement wrote only its artifact; the import it failed to measure keeps its own.
    if (job.kind === "measurement" && job.segmentationId) await env.BUCKET.delete(measuredArtifactKey(job.orgId, job.segmentationId));
    await db.update(jobs).set({ outputsClearedAt: now }).where(eq(jobs.id, job.id));
  }
  return failed.length;
}

/**
 * Resumable uploads left pending for a day: their multipart upload is aborted (its parts freed)
 * and the record marked failed with the reason, so the client sees why. The record, like every
 * record, counts against the storage cap until it is deleted (the API contract's rule).
 */
async function giveUpStaleUploads(env: Bindings, now: number): Promise<number> {
  const db = database(env.DB);
  const stale = await db
    .select()
    .from(images)
    .where(and(eq(images.status, "pending"), isNotNull(images.partCount), lt(images.updatedAt, now - STALE_UPLOAD_MS)))
    .limit(BATCH);
  for (const image of stale) {
    if (image.uploadId)
      await env.BUCKET.resumeMultipartUpload(image.r2Key, image.uploadId)
        .abort()
        .catch(() => undefined);
    await db.batch([
      db.delete(uploadParts).where(eq(uploadParts.imageId, image.id)),
      db
        .update(images)
        .set({ status: "failed", uploadId: null, uploadError: "Upload was not completed within 24 hours; its parts were discarded", updatedAt: now })
        .where(and(eq(images.id, image.id), eq(images.status, "pending"))),
    ]);
  }
  return stale.length;
}

/**
 * Streamed uploads (POST /upload, one call) whose request died where its own cleanup could not run:
 * the client hung up or the isolate was killed mid-stream. Their multipart upload, recorded before
 * the first byte, is aborted and the record removed: its client never learned the image's id.
 */
async function dropAbandonedStreams(env: Bindings, now: number): Promise<number> {
  const abandoned = await database(env.DB)
    .select()
    .from(images)
    .where(and(eq(images.status, "pending"), isNull(images.partCount), lt(images.updatedAt, now - STALE_STREAM_MS)))
    .limit(BATCH);
  for (const image of abandoned) await deleteImage(env, image);
  return abandoned.length;
}

// Exported for its test only (test/worker/job-state-machine.test.ts).
/** Longer than any conversion's queue delay and lease: a processing image older than this has lost its job. */
export const ORPHANED_PROCESSING_MS = 15 * 60 * 1000;

/**
 * Images left "processing" with no conversion queued or running: the completing request died
 * between claiming the upload and queueing its conversion. One whose multipart upload never
 * completed is pending again (the client may complete it again); one whose bytes are whole gets
 * its conversion now.
 */
async function recoverOrphanedProcessing(env: Bindings, now: number): Promise<number> {
  const orphaned = await database(env.DB)
    .select()
    .from(images)
    .where(
      and(
        eq(images.status, "processing"),
        lt(images.updatedAt, now - ORPHANED_PROCESSING_MS),
        sql`NOT EXISTS (SELECT 1 FROM ${jobs} WHERE ${jobs.imageId} = ${images.id} AND ${jobs.kind} = 'conversion' AND ${jobs.status} IN ('SUBMITTED', 'STARTED'))`,
      ),
    )
    .limit(BATCH);
  for (const image of orphaned) {
    if (image.uploadId) await updateImage(env.DB, image.id, { status: "pending" });
    else await createConversionJob(env, image.orgId, image.id);
  }
  return orphaned.length;
}

// Exported for its test only (test/worker/delete-and-submit.test.ts).
/** Longer than any deletion takes: an image claimed for deletion this long ago lost the request deleting it. */
export const INTERRUPTED_DELETION_MS = 5 * 60 * 1000;

/** Images whose deletion was claimed but never finished (the request or its isolate died): deleted now. */
async function finishInterruptedDeletions(env: Bindings, now: number): Promise<number> {
  const interrupted = await database(env.DB)
    .select()
    .from(images)
    .where(and(isNotNull(images.deletingSince), lt(images.deletingSince, now - INTERRUPTED_DELETION_MS)))
    .limit(BATCH);
  for (const image of interrupted) await deleteImage(env, image);
  return interrupted.length;
}

export async function sweepStorage(
  env: Bindings,
  now = Date.now(),
): Promise<{ failedOutputs: number; staleUploads: number; abandonedStreams: number; orphanedProcessing: number; interruptedDeletions: number }> {
  return {
    failedOutputs: await clearFailedOutputs(env, now),
    staleUploads: await giveUpStaleUploads(env, now),
    abandonedStreams: await dropAbandonedStreams(env, now),
    orphanedProcessing: await recoverOrphanedProcessing(env, now),
    interruptedDeletions: await finishInterruptedDeletions(env, now),
  };
}

/** sweepStorage, at most once a minute per isolate, for paths that run far more often than that. */
export async function sweepStorageNowAndThen(env: Bindings): Promise<void> {
  const now = Date.now();
  if (now - lastSweep < SWEEP_INTERVAL_MS) return;
  lastSweep = now;
  await sweepStorage(env, now);
}
