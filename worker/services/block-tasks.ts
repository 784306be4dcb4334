// A block-wise prediction fanned out over the runners. Its first attempt surveys the image and
// completes with a plan (planBlockTasks): the prediction then waits, held by no lease, while its
// blocks are job rows of kind `block` that any runner leases (leaseBlockTask), with the same
// attempts, lease expiry, heartbeats and sweep as every job (jobs.ts). Each block writes its kept
// cells under the segmentation's prefix and completes (completeBlock); the last one to complete
// sends the prediction back to SUBMITTED with a wake-up, and its next attempt merges the parts into
// the artifact in raster order. A block that fails for good fails the prediction (jobs.ts).
//
//   prediction: SUBMITTED -> STARTED (plan) -> STARTED, waiting for blocks -> SUBMITTED -> STARTED (merge) -> COMPLETED
//   block:      SUBMITTED -> STARTED -> COMPLETED   (or back, or FAILED, as any job)
import { and, asc, eq, sql } from "drizzle-orm";
import { jobs } from "../../schema/db.ts";
import type { BlockPlanResult, BlockResult } from "../../schema/internal-api.ts";
import { blockPartKey, blockPartsPrefix } from "../../schema/storage-keys.ts";
import type { Bindings } from "../env.ts";
import { HttpError } from "../errors.ts";
import { database } from "../storage/database.ts";
import { deletePrefix } from "./images.ts";
import { completeStatement, getJobById, isLeaseToken, type Job, startAttempt, waitingForBlocks, wakeUp } from "./jobs.ts";
import { settings } from "./settings.ts";

/** Progress of a waiting prediction: the survey was its first 5%, the merge is its last 5%. */
const progressSql = (done: unknown, total: unknown) => sql`0.05 + 0.9 * ${done} / ${total}`;

/**
 * The plan attempt's completion: the prediction waits for its blocks, and one SUBMITTED block task
 * per block is inserted, in the same transaction. The plan's own lease ends here (its token is
 * cleared), so a late repeat of this call is refused like any lost lease, and the unique
 * (parent, index) keeps the blocks from being inserted twice.
 */
export async function planBlockTasks(env: Bindings, job: Job, leaseToken: string, result: BlockPlanResult): Promise<Job> {
  if (job.kind !== "prediction") throw new HttpError(422, "Only a prediction is planned in blocks");
  if (job.status !== "STARTED" || !(await isLeaseToken(job, leaseToken))) {
    throw new HttpError(409, `Job ${job.id} is not held by this lease (it is ${job.status}); its plan was not recorded`);
  }
  const plan = result.block_plan;
  const total = plan.rows * plan.columns;
  const now = Date.now();
  const input = { ...((job.input as Record<string, unknown> | null) ?? {}), block_plan: plan };
  const [parked] = await env.DB.batch([
    env.DB.prepare(
      `UPDATE jobs SET lease_token = NULL, lease_holder = NULL, lease_expires_at = NULL, input = ?3,
         blocks_total = ?4, blocks_done = 0, blocks_glass = 0, progress = 0.05, stage = ?5
       WHERE id = ?1 AND status = 'STARTED' AND lease_token = ?2 RETURNING id`,
    ).bind(job.id, leaseToken, JSON.stringify(input), total, `blocks 0 of ${total}`),
    env.DB.prepare(
      `INSERT INTO jobs (id, org_id, kind, status, image_id, model_id, segmentation_id, dedupe_key, attempts, max_attempts,
                         created_at, enqueued_at, parent_job_id, block_index)
       SELECT lower(hex(randomblob(16))), parent.org_id, 'block', 'SUBMITTED', parent.image_id, parent.model_id, parent.segmentation_id,
              'block:' || parent.id || ':' || indices.value, 0, ?2, ?3, ?3, parent.id, indices.value
       FROM jobs AS parent, json_each(?4) AS indices
       WHERE parent.id = ?1 AND parent.status = 'STARTED' AND parent.lease_token IS NULL AND parent.blocks_total = ?5
       ON CONFLICT DO NOTHING`,
    ).bind(job.id, settings(env).maxAttempts, now, JSON.stringify(Array.from({ length: total }, (_, i) => i)), total),
  ]);
  // D1's batch answers one result per statement, in order.
  if (parked!.results.length !== 1) throw new HttpError(409, `Job ${job.id} is not held by this lease; its plan was not recorded`);
  return (await getJobById(env.DB, job.id))!;
}

/**
 * The next block task for `holder`, or null. Organizations take turns: the block comes from the
 * organization with the fewest blocks running now, then the longest waiting (in the order they were
 * inserted: a prediction's blocks in grid order), so one organization's
 * slide never keeps another's from the runners. Two runners racing for one block resolve in
 * startAttempt's conditional update; the loser looks again.
 */
export async function leaseBlockTask(env: Bindings, holder: string, leaseMs: number, orgIds: string[] | null = null): Promise<Job | null> {
  for (let tries = 0; tries < 3; tries++) {
    // A scoped runner (runner-scopes.ts) takes its organizations' blocks only.
    const next = await env.DB.prepare(
      `SELECT block.id FROM jobs AS block JOIN jobs AS parent ON parent.id = block.parent_job_id
       WHERE block.kind = 'block' AND block.status = 'SUBMITTED'
         AND parent.status = 'STARTED' AND parent.blocks_total IS NOT NULL AND parent.lease_token IS NULL
         AND (?1 IS NULL OR block.org_id IN (SELECT value FROM json_each(?1)))
       ORDER BY (SELECT count(*) FROM jobs AS running WHERE running.kind = 'block' AND running.status = 'STARTED' AND running.org_id = block.org_id),
                block.enqueued_at, block.rowid
       LIMIT 1`,
    )
      .bind(orgIds && JSON.stringify(orgIds))
      .first<{ id: string }>();
    if (!next) return null;
    const started = await startAttempt(env.DB, next.id, holder, leaseMs, ["block"]);
    if (started) return started;
  }
  return null;
}

/**
 * A block's completion: the block is COMPLETED and its prediction's counts move on, in one
 * transaction; the completion that finishes the last block also sends the prediction back to
 * SUBMITTED (with a wake-up), so exactly one merge follows.
 */
export async function completeBlock(env: Bindings, block: Job, leaseToken: string, result: BlockResult): Promise<Job> {
  const held = await isLeaseToken(block, leaseToken);
  if (block.status === "COMPLETED" && held) return block;
  if (block.status !== "STARTED" || !held) {
    throw new HttpError(409, `Job ${block.id} is not held by this lease (it is ${block.status}); its result was not recorded`);
  }
  const parentId = block.parentJobId!;
  const parts = await env.BUCKET.head(blockPartKey(block.orgId, block.segmentationId!, block.blockIndex!, "cells"));
  if (!parts) throw new HttpError(400, "The block's cells were not uploaded (expected at the job's signed output URL)");
  const complete = completeStatement(env.DB, block.id, leaseToken, { result }).toSQL();
  const db = database(env.DB);
  const done = sql`(SELECT count(*) FROM jobs AS b WHERE b.parent_job_id = ${parentId} AND b.status = 'COMPLETED')`;
  const glass = sql`(SELECT count(*) FROM jobs AS b WHERE b.parent_job_id = ${parentId} AND b.status = 'COMPLETED' AND json_extract(b.result, '$.glass'))`;
  const counted = db
    .update(jobs)
    .set({
      blocksDone: done,
      blocksGlass: glass,
      progress: progressSql(done, jobs.blocksTotal),
      stage: sql`'blocks ' || ${done} || ' of ' || ${jobs.blocksTotal}`,
    })
    .where(and(eq(jobs.id, parentId), waitingForBlocks))
    .toSQL();
  const toMerge = db
    .update(jobs)
    .set({ status: "SUBMITTED", stage: "merging", enqueuedAt: Date.now() })
    .where(and(eq(jobs.id, parentId), waitingForBlocks, sql`${jobs.blocksDone} = ${jobs.blocksTotal}`))
    .returning()
    .toSQL();
  const [completed, , merging] = await env.DB.batch([
    env.DB.prepare(complete.sql).bind(...complete.params),
    env.DB.prepare(counted.sql).bind(...counted.params),
    env.DB.prepare(toMerge.sql).bind(...toMerge.params),
  ]);
  const now = (await getJobById(env.DB, block.id))!;
  // D1's batch answers one result per statement, in order.
  if (completed!.results.length !== 1 && !(now.status === "COMPLETED" && (await isLeaseToken(now, leaseToken)))) {
    throw new HttpError(409, `Job ${block.id} is not held by this lease (it is ${now.status}); its result was not recorded`);
  }
  if (merging!.results.length === 1) await wakeUp(env, { id: parentId, kind: "prediction" });
  return now;
}

/** A waiting prediction's blocks, in grid order, with their results (what the merge reads). */
export async function blocksOf(env: Bindings, prediction: Pick<Job, "id">): Promise<Job[]> {
  return database(env.DB).select().from(jobs).where(eq(jobs.parentJobId, prediction.id)).orderBy(asc(jobs.blockIndex));
}

/** Once the merged artifact is recorded, the blocks' parts are of no more use. */
export async function removeBlockParts(env: Bindings, prediction: Pick<Job, "orgId" | "segmentationId">): Promise<void> {
  await deletePrefix(env.BUCKET, blockPartsPrefix(prediction.orgId, prediction.segmentationId!));
}
