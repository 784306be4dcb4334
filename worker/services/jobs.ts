// The one job state machine, for every kind (prediction, training, preview, measurement, conversion). A job row is the
// truth; it moves only by conditional updates (UPDATE ... WHERE status = ... RETURNING), so
// concurrent requests resolve inside D1:
//
//   SUBMITTED --start--> STARTED --complete--> COMPLETED
//       ^                  |  \--fail (input or model fault, or out of attempts)--> FAILED
//       |                  |  \--lease expired, out of attempts / past its time limit--> FAILED
//       \--lease expired / runner or service fault (attempts left)--/
//       \--lease withdrawn (never turned into work; the attempt is not counted)--/
//
// GPU jobs (analyses, and the dashboard's image previews) are started by a runner's lease, conversions by the worker's own queue consumer; both
// hold a lease that the sweep (cron and every lease call) takes back once it runs out, so a runner
// or an isolate that dies mid-job never leaves it STARTED. Every SUBMITTED job has a queue message
// as its wake-up; the message is only a hint, so a duplicate or stale one is harmless.
import { and, desc, eq, inArray, isNotNull, lt, ne, type SQL, sql } from "drizzle-orm";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";
import { images, isRetryableFault, jobs, type JobFault, type JobKind } from "../../schema/db.ts";
import type { Bindings, Organization } from "../env.ts";
import { HttpError, notFound } from "../errors.ts";
import { gpuJobQueue } from "../queues/gpu-job-queue.ts";
import { constantTimeEqual, newId, randomToken, sha256Hex } from "./crypto.ts";
import { database } from "../storage/database.ts";
import { getImage, type Image, unusable } from "./images.ts";
import { getSegmentation } from "./segmentations.ts";
import { settings, timeLimitSeconds } from "./settings.ts";

export type Job = typeof jobs.$inferSelect;

const ACTIVE = ["SUBMITTED", "STARTED"] as const;
const ANALYSES: JobKind[] = ["prediction", "training"];
/** What runners lease: the analyses, the dashboard's image previews and imports' intensity measurements. */
const GPU_KINDS: JobKind[] = [...ANALYSES, "preview", "measurement"];
/** Fetching, decoding and uploading around a training's plan-bounded training time. */
export const TRAINING_OVERHEAD_SECONDS = 10 * 60;

/** A job's inputs or result cannot be had, whoever runs it again: fail it for good, with this reason. */
export class JobFaultError extends Error {
  readonly fault: JobFault;
  constructor(fault: JobFault, message: string) {
    super(message);
    this.fault = fault;
  }
}

/**
 * The wake-up: conversions go to the worker's own queue, GPU jobs to the runners'. Block tasks have
 * none: a runner's lease call looks for them in their rows once the queue offers no job
 * (block-tasks.ts), so a slide's hundreds of blocks never stand in the queue before another
 * organization's jobs.
 */
export async function wakeUp(env: Bindings, job: Pick<Job, "id" | "kind">, delaySeconds = 0): Promise<void> {
  if (job.kind === "block") return;
  if (job.kind === "conversion") await env.CONVERSIONS.send({ job_id: job.id }, { contentType: "json", ...(delaySeconds > 0 && { delaySeconds }) });
  else await gpuJobQueue(env).send({ job_id: job.id });
}

/**
 * A conversion that failed for good leaves its image failed with the reason, and no bytes no one can
 * use; a block that failed for good fails its prediction with the block's reason (failBlockParent).
 */
async function afterFailed(env: Bindings, job: Job): Promise<void> {
  if (job.kind === "block") return failBlockParent(env, job);
  if (job.kind !== "conversion" || !job.imageId) return;
  const [image] = await database(env.DB)
    .update(images)
    .set({ status: "failed", uploadError: job.reason, updatedAt: Date.now() })
    .where(and(eq(images.id, job.imageId), eq(images.status, "processing")))
    .returning();
  if (image) await env.BUCKET.delete(image.r2Key);
}

function monthStart(now = new Date()): number {
  return Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
}

interface SubmitSpec {
  kind: "prediction" | "training";
  imageId?: string;
  /** Images the job reads: each must still be ready and not being deleted when the job is inserted. */
  imageIds: string[];
  /** Segmentations the job reads (a training's labels): each must still exist when the job is inserted. */
  segmentationIds: string[];
  modelId: string;
  input?: unknown;
  /** Same key = identical submission. */
  dedupeKey: string;
  /** Identical active jobs with these statuses answer "skipped" instead of queueing a second run. */
  skipIfIdentical: readonly ("SUBMITTED" | "STARTED")[];
  /** Only one active job of this kind per organization. */
  exclusive: boolean;
  /** The job's time limit (jobs.timeLimitSeconds). */
  timeLimitSeconds: number;
}

/** Ids of what the job will produce, fixed at submission so every attempt writes the same place. */
function outputIds(kind: SubmitSpec["kind"]) {
  return kind === "prediction" ? { segmentationId: newId(), resultModelId: null } : { segmentationId: null, resultModelId: newId() };
}

/** What a training job's input holds; `max_seconds` is its plan's time bound, fixed at submission. */
export interface TrainingInput {
  image_ids: string[];
  /** The segmentation each image is learned from, fixed at submission (older jobs: none, the latest is taken). */
  segmentation_ids?: string[];
  name: string | null;
  steps: number | null;
  max_seconds?: number;
  /** The request's seed (absent: the runner's default, 1). */
  seed?: number;
}

export type SubmitOutcome = { job: Job; skipped: boolean };

/**
 * Creates a GPU job if the organization's rules allow it. The insert carries every rule in its
 * WHERE clause (no identical or, for exclusive kinds, any active job; the monthly analysis cap;
 * every input still there: images ready and not claimed by a deletion, segmentations not deleted),
 * so twenty simultaneous submits create at most what the rules allow, and a deletion either
 * happens before the job (which is then refused, uncharged) or sees it and is refused itself.
 */
export async function submitGpuJob(env: Bindings, org: Organization, spec: SubmitSpec): Promise<SubmitOutcome> {
  const db = database(env.DB);
  const now = Date.now();
  const id = newId();
  const output = outputIds(spec.kind);
  const inserted = await env.DB.prepare(
    `INSERT INTO jobs (id, org_id, kind, status, image_id, model_id, input, dedupe_key, attempts, max_attempts, created_at, enqueued_at,
                       segmentation_id, result_model_id, time_limit_seconds)
     SELECT ?1, ?2, ?3, 'SUBMITTED', ?4, ?5, ?6, ?7, 0, ?8, ?9, ?9, ?13, ?14, ?17
     WHERE NOT EXISTS (SELECT 1 FROM jobs WHERE org_id = ?2 AND kind = ?3 AND status IN ('SUBMITTED', 'STARTED')
                         AND (?10 OR dedupe_key = ?7))
       AND (SELECT count(*) FROM jobs WHERE org_id = ?2 AND kind IN ('prediction', 'training') AND created_at >= ?11) < ?12
       AND (SELECT count(*) FROM images WHERE org_id = ?2 AND status = 'ready' AND deleting_since IS NULL
              AND id IN (SELECT value FROM json_each(?15))) = (SELECT count(DISTINCT value) FROM json_each(?15))
       AND (SELECT count(*) FROM segmentations WHERE org_id = ?2
              AND id IN (SELECT value FROM json_each(?16))) = (SELECT count(DISTINCT value) FROM json_each(?16))
     RETURNING id`,
  )
    .bind(
      id,
      org.id,
      spec.kind,
      spec.imageId ?? null,
      spec.modelId,
      JSON.stringify(spec.input ?? null),
      spec.dedupeKey,
      settings(env).maxAttempts,
      now,
      spec.exclusive ? 1 : 0,
      monthStart(new Date(now)),
      org.analysisCap,
      output.segmentationId,
      output.resultModelId,
      JSON.stringify(spec.imageIds),
      JSON.stringify(spec.segmentationIds),
      spec.timeLimitSeconds,
    )
    .first<{ id: string }>();

  if (inserted) {
    const job = (await getJob(env.DB, org.id, id))!;
    await wakeUp(env, job);
    return { job, skipped: false };
  }

  // Nothing was inserted: say why, in the order a user would want to hear it.
  const active = await db
    .select()
    .from(jobs)
    .where(and(eq(jobs.orgId, org.id), eq(jobs.kind, spec.kind), inArray(jobs.status, ACTIVE)))
    .orderBy(jobs.createdAt);
  const identical = active.find((j) => j.dedupeKey === spec.dedupeKey && (spec.skipIfIdentical as string[]).includes(j.status));
  if (identical) return { job: identical, skipped: true };
  const [oldest] = active;
  if (spec.exclusive && oldest) {
    throw new HttpError(
      400,
      `A ${spec.kind} is already ${oldest.status === "STARTED" ? "running" : "queued"} for this organization (id ${oldest.id}); wait for it to finish`,
    );
  }
  const used = await analysesThisMonth(env.DB, org.id);
  if (used >= org.analysisCap) {
    throw new HttpError(402, `Monthly analysis limit reached: ${used} of ${org.analysisCap} predictions and trainings used this month`);
  }
  const missing = await missingInput(env.DB, org.id, spec);
  if (missing) throw missing;
  // The blocking job finished between the insert and the checks: try once more.
  return submitGpuJob(env, org, spec);
}

/** Why a job's inputs fail the insert's conditions (an image or a segmentation deleted, or being deleted, since the request's own checks). */
async function missingInput(d1: D1Database, orgId: string, spec: SubmitSpec): Promise<HttpError | null> {
  for (const id of spec.imageIds) {
    const image = await getImage(d1, orgId, id);
    if (!image) return notFound("Image", id);
    const problem = unusable(image);
    if (problem) return problem;
  }
  for (const id of spec.segmentationIds) if (!(await getSegmentation(d1, orgId, id))) return notFound("Segmentation", id);
  return null;
}

export async function analysesThisMonth(d1: D1Database, orgId: string): Promise<number> {
  const [row] = await database(d1)
    .select({ n: sql<number>`count(*)` })
    .from(jobs)
    .where(and(eq(jobs.orgId, orgId), inArray(jobs.kind, ANALYSES), sql`${jobs.createdAt} >= ${monthStart()}`));
  // count(*) without GROUP BY answers exactly one row.
  return row!.n;
}

export async function createConversionJob(env: Bindings, orgId: string, imageId: string): Promise<Job> {
  const now = Date.now();
  const [job] = await database(env.DB)
    .insert(jobs)
    .values({
      id: newId(),
      orgId,
      kind: "conversion",
      imageId,
      modelId: null,
      dedupeKey: `conversion:${imageId}`,
      maxAttempts: settings(env).maxAttempts,
      createdAt: now,
      enqueuedAt: now,
    })
    .returning();
  // An INSERT without ON CONFLICT returns the row it inserted, or throws.
  const inserted = job!;
  await wakeUp(env, inserted);
  return inserted;
}

/**
 * Jobs that are no analysis (they count against no cap) an organization may have queued or running
 * at once, per kind: without this bound one organization's uploads (previews) or imports
 * (measurements) could occupy every runner. The insert that makes such a job, or what it belongs
 * to, carries `belowJobsInHand` in its WHERE clause (one statement, so concurrent requests cannot
 * pass it), and a refusal is `tooManyJobsInHand`'s 429.
 */
const JOBS_IN_HAND_PER_ORG = {
  preview: { most: 2, doing: "previews being made" },
  measurement: { most: 2, doing: "imported segmentations being measured" },
} as const;
type LimitedKind = keyof typeof JOBS_IN_HAND_PER_ORG;

/** SQL: the organization has fewer than its most jobs of `kind` queued or running. */
export function belowJobsInHand(kind: LimitedKind, orgId: string): SQL {
  return sql`(SELECT COUNT(*) FROM ${jobs} WHERE ${jobs.orgId} = ${orgId} AND ${jobs.kind} = ${kind}
                AND ${jobs.status} IN ('SUBMITTED', 'STARTED')) < ${JOBS_IN_HAND_PER_ORG[kind].most}`;
}

/** Whether the organization is below its most jobs of `kind` in hand now (the insert checks again). */
export async function isBelowJobsInHand(d1: D1Database, kind: LimitedKind, orgId: string): Promise<boolean> {
  const query = new SQLiteAsyncDialect().sqlToQuery(sql`SELECT ${belowJobsInHand(kind, orgId)} AS below`);
  const row = await d1
    .prepare(query.sql)
    .bind(...query.params)
    .first<{ below: number }>();
  return row?.below === 1;
}

/** The answer when `belowJobsInHand` stopped an insert: ask again shortly. */
export function tooManyJobsInHand(kind: LimitedKind): HttpError {
  const { most, doing } = JOBS_IN_HAND_PER_ORG[kind];
  return new HttpError(429, `This organization already has ${most} ${doing}, the most at once; ask again when one is done`, { "Retry-After": "5" });
}

/**
 * The image's preview job (a GPU job that is not an analysis: it counts against no cap), created
 * unless the image ever had one, so a preview is made once; only while the image is not being
 * deleted, and while the organization is below its previews in hand (one statement, so
 * concurrent requests cannot pass either); null when none was created.
 */
export async function createPreviewJob(env: Bindings, image: Pick<Image, "orgId" | "id" | "width" | "height">): Promise<Job | null> {
  const { orgId, id: imageId } = image;
  const now = Date.now();
  const id = newId();
  const timeLimit = timeLimitSeconds(env, { kind: "preview", pixels: pixelsOf(image) });
  const query = new SQLiteAsyncDialect().sqlToQuery(
    sql`INSERT INTO jobs (id, org_id, kind, status, image_id, model_id, dedupe_key, attempts, max_attempts, created_at, enqueued_at, time_limit_seconds)
     SELECT ${id}, ${orgId}, 'preview', 'SUBMITTED', ${imageId}, NULL, ${`preview:${imageId}`}, 0, ${settings(env).maxAttempts}, ${now}, ${now}, ${timeLimit}
     WHERE NOT EXISTS (SELECT 1 FROM jobs WHERE org_id = ${orgId} AND kind = 'preview' AND image_id = ${imageId})
       AND ${belowJobsInHand("preview", orgId)}
       AND EXISTS (SELECT 1 FROM images WHERE id = ${imageId} AND org_id = ${orgId} AND deleting_since IS NULL)
     RETURNING id`,
  );
  const inserted = await env.DB.prepare(query.sql)
    .bind(...query.params)
    .first<{ id: string }>();
  if (inserted) {
    const job = (await getJob(env.DB, orgId, id))!;
    await wakeUp(env, job);
    return job;
  }
  return null;
}

/**
 * The measurement of an imported segmentation's intensities (a GPU job that is no analysis: it
 * counts against no cap; each import has one, and an organization has at most its measurements in
 * hand: the import's insert carries `belowJobsInHand("measurement")`), as a statement to batch with
 * the import's insert: the job is inserted only if its segmentation was, so an import and its
 * measurement are recorded together or not at all. `wakeUp` then sends its
 * queue message; should that fail, the sweep re-sends it (a SUBMITTED job's message is only a hint).
 */
export function measurementJob(
  env: Bindings,
  segmentation: { orgId: string; imageId: string; id: string; width: number | null; height: number | null },
): { statement: D1PreparedStatement; wakeUp: () => Promise<void> } {
  const id = newId();
  const now = Date.now();
  const timeLimit = timeLimitSeconds(env, { kind: "measurement", pixels: pixelsOf(segmentation) });
  const statement = env.DB.prepare(
    `INSERT INTO jobs (id, org_id, kind, status, image_id, model_id, segmentation_id, dedupe_key, attempts, max_attempts, created_at, enqueued_at,
                       time_limit_seconds)
     SELECT ?1, ?2, 'measurement', 'SUBMITTED', ?3, NULL, ?4, ?5, 0, ?6, ?7, ?7, ?8
     WHERE EXISTS (SELECT 1 FROM segmentations WHERE id = ?4 AND org_id = ?2)`,
  ).bind(id, segmentation.orgId, segmentation.imageId, segmentation.id, `measurement:${segmentation.id}`, settings(env).maxAttempts, now, timeLimit);
  return { statement, wakeUp: () => wakeUp(env, { id, kind: "measurement" }) };
}

export async function getJob(d1: D1Database, orgId: string, id: string): Promise<Job | null> {
  const [job] = await database(d1)
    .select()
    .from(jobs)
    .where(and(eq(jobs.id, id), eq(jobs.orgId, orgId)))
    .limit(1);
  return job ?? null;
}

export async function getJobById(d1: D1Database, id: string): Promise<Job | null> {
  const [job] = await database(d1).select().from(jobs).where(eq(jobs.id, id)).limit(1);
  return job ?? null;
}

/** The pixels of an image whose size is known, else null (a job on it gets the longest time limit). */
export function pixelsOf(image: { width: number | null; height: number | null }): number | null {
  return image.width !== null && image.height !== null ? image.width * image.height : null;
}

/**
 * A block-wise prediction while its blocks run: STARTED, held by no lease (so no sweep takes it
 * back), its blocks counted in blocks_total. Its time limit still runs (the sweep fails it past it).
 */
export const waitingForBlocks = sql`(${jobs.status} = 'STARTED' AND ${jobs.blocksTotal} IS NOT NULL AND ${jobs.leaseToken} IS NULL)`;

/** SQL: the block's prediction is still waiting for its blocks (a block of an ended prediction has nothing to do). */
const parentWaiting = sql`EXISTS (SELECT 1 FROM jobs AS parent WHERE parent.id = ${jobs.parentJobId}
  AND parent.status = 'STARTED' AND parent.blocks_total IS NOT NULL AND parent.lease_token IS NULL)`;

/** The reason a block-wise prediction fails with when one of its blocks does. */
function blockFailureReason(block: Pick<Job, "blockIndex" | "reason">, total: number | null): string {
  return `Block ${(block.blockIndex ?? 0) + 1} of ${total ?? "?"} failed: ${block.reason ?? "no reason given"}`;
}

/**
 * A block failed for good (its input, or out of attempts): its prediction fails with the block's
 * reason and fault, and its other blocks end with it (a running one hears it at its next heartbeat).
 */
async function failBlockParent(env: Bindings, block: Job): Promise<void> {
  if (!block.parentJobId) return;
  const parent = await getJobById(env.DB, block.parentJobId);
  const db = database(env.DB);
  await db.batch([
    db
      .update(jobs)
      .set({ status: "FAILED", reason: blockFailureReason(block, parent?.blocksTotal ?? null), fault: block.fault, finishedAt: Date.now() })
      .where(and(eq(jobs.id, block.parentJobId), waitingForBlocks)),
    failBlocksOfEndedPredictions(env.DB, block.parentJobId),
  ]);
}

/** Ends the active blocks of predictions no longer waiting for them (one prediction's, or all). */
function failBlocksOfEndedPredictions(d1: D1Database, parentId?: string) {
  return database(d1)
    .update(jobs)
    .set({
      status: "FAILED",
      reason: "Its prediction ended before this block was done",
      fault: "input",
      finishedAt: Date.now(),
      leaseToken: null,
      leaseHolder: null,
      leaseExpiresAt: null,
    })
    .where(and(eq(jobs.kind, "block"), inArray(jobs.status, ACTIVE), parentId ? eq(jobs.parentJobId, parentId) : undefined, sql`NOT ${parentWaiting}`));
}

/**
 * SUBMITTED -> STARTED for one holder (a runner, or the worker itself for a conversion); null if
 * someone else got there first, the job is done, it is not of one of `kinds`, or its time limit
 * has run out (a job whose earlier attempt ran past it is never run again: the sweep fails it).
 */
export async function startAttempt(d1: D1Database, id: string, holder: string, leaseMs: number, kinds: readonly JobKind[] = GPU_KINDS): Promise<Job | null> {
  const now = Date.now();
  const [job] = await database(d1)
    .update(jobs)
    .set({
      status: "STARTED",
      attempts: sql`${jobs.attempts} + 1`,
      leaseHolder: holder,
      leaseToken: randomToken(24),
      leaseExpiresAt: now + leaseMs,
      startedAt: sql`coalesce(${jobs.startedAt}, ${now})`,
      // A block-wise prediction leased again once its blocks are done keeps their progress: it merges them.
      progress: sql`CASE WHEN ${jobs.blocksTotal} IS NULL THEN 0 ELSE ${jobs.progress} END`,
      stage: sql`CASE WHEN ${jobs.blocksTotal} IS NULL THEN 'leased' ELSE 'merging' END`,
    })
    .where(and(eq(jobs.id, id), eq(jobs.status, "SUBMITTED"), inArray(jobs.kind, kinds), sql`NOT ${pastTimeLimit(now)}`))
    .returning();
  return job ?? null;
}

/**
 * Starts the oldest queued job of these organizations for a scoped runner (runner-scopes.ts), read
 * from the jobs table rather than the queue; null when none is waiting (or every one was taken first).
 */
export async function startNextOfOrganizations(d1: D1Database, orgIds: string[], holder: string, leaseMs: number): Promise<Job | null> {
  if (orgIds.length === 0) return null;
  for (let tries = 0; tries < 3; tries++) {
    const [next] = await database(d1)
      .select({ id: jobs.id })
      .from(jobs)
      .where(and(eq(jobs.status, "SUBMITTED"), inArray(jobs.kind, GPU_KINDS), inArray(jobs.orgId, orgIds)))
      .orderBy(jobs.enqueuedAt, jobs.createdAt)
      .limit(1);
    if (!next) return null;
    const started = await startAttempt(d1, next.id, holder, leaseMs);
    if (started) return started;
  }
  return null;
}

const holding = (id: string, leaseToken: string) => and(eq(jobs.id, id), eq(jobs.status, "STARTED"), eq(jobs.leaseToken, leaseToken));

/**
 * Whether `leaseToken` is the job's, compared in constant time: the token is the runner's proof of
 * its lease, so a comparison that stops at the first differing character would leak it. (The
 * conditional updates compare it again in SQL, against races, after this check has passed.)
 */
export async function isLeaseToken(job: Pick<Job, "leaseToken">, leaseToken: string): Promise<boolean> {
  return job.leaseToken !== null && (await constantTimeEqual(job.leaseToken, leaseToken));
}

/**
 * STARTED -> SUBMITTED for a lease that never turned into work: its runner hung up while it was
 * granted, or leased it while shutting down and handed it back. The attempt is taken back, as if
 * the lease had not happened, and the job gets a new wake-up so the next runner has it at once
 * instead of after the lease expires.
 */
export async function withdrawAttempt(env: Bindings, id: string, leaseToken: string): Promise<Job | null> {
  const [withdrawn] = await database(env.DB)
    .update(jobs)
    .set({
      status: "SUBMITTED",
      attempts: sql`${jobs.attempts} - 1`,
      startedAt: sql`CASE WHEN ${jobs.attempts} = 1 THEN NULL ELSE ${jobs.startedAt} END`,
      enqueuedAt: Date.now(),
      leaseToken: null,
      leaseHolder: null,
      leaseExpiresAt: null,
      stage: null,
    })
    .where(holding(id, leaseToken))
    .returning();
  if (withdrawn) await wakeUp(env, withdrawn);
  return withdrawn ?? null;
}

/**
 * A lease's public id: a digest of its secret token, so each lease has its own (a withdrawn
 * attempt's number is given out again, its token never) and a URL can name it without carrying the
 * token, from which it cannot be worked back.
 */
export async function leaseIdOf(leaseToken: string): Promise<string> {
  return (await sha256Hex(`cellseg-lease:${leaseToken}`)).slice(0, 32);
}

/**
 * Whether lease `leaseId` (leaseIdOf) is still the job's live one: what a runner's output upload is
 * checked against, so a lease that ran out, or was handed back and the job leased again, writes nothing.
 */
export async function leaseIsLive(d1: D1Database, id: string, leaseId: string): Promise<boolean> {
  const [job] = await database(d1)
    .select({ leaseToken: jobs.leaseToken })
    .from(jobs)
    .where(and(eq(jobs.id, id), eq(jobs.status, "STARTED"), sql`${jobs.leaseExpiresAt} > ${Date.now()}`))
    .limit(1);
  return job?.leaseToken ? constantTimeEqual(await leaseIdOf(job.leaseToken), leaseId) : false;
}

/**
 * A job past its time limit, counted from its first start across every attempt: no heartbeat renews
 * its lease, no lease starts it again, a failure does not send it back, and the sweep fails it.
 */
const pastTimeLimit = (now: number) =>
  sql`(${jobs.timeLimitSeconds} IS NOT NULL AND ${jobs.startedAt} IS NOT NULL AND ${jobs.startedAt} + ${jobs.timeLimitSeconds} * 1000 < ${now})`;

/** What a job past its time limit is FAILED with. */
const timeLimitReason = sql`CASE WHEN ${jobs.kind} = 'training' AND json_extract(${jobs.input}, '$.max_seconds') IS NOT NULL
  THEN 'Training ran past its plan''s time bound of ' || json_extract(${jobs.input}, '$.max_seconds') || ' s; it was stopped'
  ELSE upper(substr(${jobs.kind}, 1, 1)) || substr(${jobs.kind}, 2) || ' ran past its time limit of ' || ${jobs.timeLimitSeconds}
    || ' s (counted from its first start, for its image''s size and parameters); it was stopped and will not be run again' END`;

/** Seconds left of a started job's time limit (null: it has none), for its runner to stop by then. */
export function timeLeftSeconds(job: Job, now = Date.now()): number | null {
  if (job.timeLimitSeconds === null || job.startedAt === null) return null;
  return Math.max(0, (job.startedAt + job.timeLimitSeconds * 1000 - now) / 1000);
}

export async function heartbeat(d1: D1Database, id: string, leaseToken: string, leaseMs: number, progress?: number, stage?: string): Promise<Job | null> {
  const now = Date.now();
  const [job] = await database(d1)
    .update(jobs)
    .set({ leaseExpiresAt: now + leaseMs, ...(progress !== undefined && { progress }), ...(stage !== undefined && { stage }) })
    .where(and(holding(id, leaseToken), sql`NOT ${pastTimeLimit(now)}`, sql`(${jobs.parentJobId} IS NULL OR ${parentWaiting})`))
    .returning();
  return job ?? null;
}

/**
 * The update that completes a job, for callers that batch it with the record it produces. The
 * completing lease's token stays on the row, so that lease repeating its report is told it
 * succeeded while any other (an attempt whose lease ran out and came back late) is refused.
 */
export function completeStatement(d1: D1Database, id: string, leaseToken: string, result: { result: unknown }) {
  return database(d1)
    .update(jobs)
    .set({
      status: "COMPLETED",
      progress: 1,
      stage: "done",
      finishedAt: Date.now(),
      leaseExpiresAt: null,
      reason: null,
      fault: null,
      result: result.result,
    })
    .where(holding(id, leaseToken))
    .returning();
}

/**
 * Ends an attempt that failed. A runner or service fault with attempts left goes back to SUBMITTED
 * (its wake-up delayed by `retryDelaySeconds`); an input or model fault, or the last attempt, is
 * FAILED with the reason; so is a runner or service fault past the job's time limit (a runner
 * stopping the job there included), with that limit as its reason.
 */
export async function failAttempt(env: Bindings, id: string, leaseToken: string, reason: string, fault: JobFault, retryDelaySeconds = 0): Promise<Job | null> {
  const now = Date.now();
  const overTime = sql`${isRetryableFault(fault) ? 1 : 0} AND ${pastTimeLimit(now)}`;
  const retry = sql`${isRetryableFault(fault) ? 1 : 0} AND ${jobs.attempts} < ${jobs.maxAttempts} AND NOT (${overTime})`;
  const [job] = await database(env.DB)
    .update(jobs)
    .set({
      status: sql`CASE WHEN ${retry} THEN 'SUBMITTED' ELSE 'FAILED' END`,
      finishedAt: sql`CASE WHEN ${retry} THEN NULL ELSE ${now} END`,
      enqueuedAt: now,
      reason: sql`CASE WHEN ${overTime} THEN ${timeLimitReason} ELSE ${reason} END`,
      fault,
      leaseToken: null,
      leaseHolder: null,
      leaseExpiresAt: null,
    })
    .where(holding(id, leaseToken))
    .returning();
  if (job?.status === "SUBMITTED") await wakeUp(env, job, retryDelaySeconds);
  if (job?.status === "FAILED") await afterFailed(env, job);
  return job ?? null;
}

/**
 * Takes back what nobody is working on any more: jobs past their time limit are FAILED whatever
 * their heartbeats say, whether running or sent back by an attempt that ran into it (their lease
 * released, never leased again); expired leases go back to SUBMITTED with a new wake-up, or FAILED
 * once out of attempts (a conversion's image with them); SUBMITTED jobs whose wake-up is old get it
 * again (a send that was lost). Runs from the cron trigger and before each lease, so it needs no
 * scheduler locally.
 */
export async function sweepJobs(env: Bindings): Promise<void> {
  const db = database(env.DB);
  const now = Date.now();
  const outOfAttempts = sql`${jobs.attempts} >= ${jobs.maxAttempts}`;
  const overTime = await db
    .update(jobs)
    .set({
      status: "FAILED",
      reason: timeLimitReason,
      fault: "runner",
      finishedAt: now,
      leaseToken: null,
      leaseHolder: null,
      leaseExpiresAt: null,
    })
    .where(and(inArray(jobs.status, ACTIVE), pastTimeLimit(now)))
    .returning();
  // Which runner stopped reporting is for the operator's log, not the job's reason (users see that).
  const holders = await db
    .select({ id: jobs.id, holder: jobs.leaseHolder })
    .from(jobs)
    .where(and(eq(jobs.status, "STARTED"), isNotNull(jobs.leaseExpiresAt), lt(jobs.leaseExpiresAt, now)));
  const expired = await db
    .update(jobs)
    .set({
      status: sql`CASE WHEN ${outOfAttempts} THEN 'FAILED' ELSE 'SUBMITTED' END`,
      reason: sql`CASE WHEN ${jobs.kind} = 'conversion'
        THEN 'Processing stopped during attempt ' || ${jobs.attempts} || ' (the worker running it stopped reporting)'
        ELSE 'Lease expired after attempt ' || ${jobs.attempts} || ' (its runner stopped reporting)' END`,
      fault: sql`CASE WHEN ${jobs.kind} = 'conversion' THEN 'service' ELSE 'runner' END`,
      finishedAt: sql`CASE WHEN ${outOfAttempts} THEN ${now} ELSE NULL END`,
      enqueuedAt: now,
      leaseToken: null,
      leaseHolder: null,
      leaseExpiresAt: null,
    })
    .where(and(eq(jobs.status, "STARTED"), isNotNull(jobs.leaseExpiresAt), lt(jobs.leaseExpiresAt, now)))
    .returning();
  const stale = await db
    .update(jobs)
    .set({ enqueuedAt: now })
    .where(and(eq(jobs.status, "SUBMITTED"), ne(jobs.kind, "block"), lt(jobs.enqueuedAt, now - settings(env).wakeUpResendSeconds * 1000)))
    .returning();
  // Blocks whose prediction failed (its time limit, a sibling block) or ended otherwise stop here too.
  await failBlocksOfEndedPredictions(env.DB);
  for (const job of expired) {
    const holder = holders.find((h) => h.id === job.id)?.holder;
    if (holder) console.warn(`job ${job.id}: the lease of attempt ${job.attempts} held by ${holder} expired; the job is ${job.status}`);
  }
  for (const job of [...overTime, ...expired, ...stale]) {
    if (job.status === "SUBMITTED") await wakeUp(env, job);
    else await afterFailed(env, job);
  }
}

/** An image's most recent predictions, newest first. */
export async function recentPredictions(d1: D1Database, orgId: string, imageId: string, limit = 10): Promise<Job[]> {
  return database(d1)
    .select()
    .from(jobs)
    .where(and(eq(jobs.orgId, orgId), eq(jobs.imageId, imageId), eq(jobs.kind, "prediction")))
    .orderBy(desc(jobs.createdAt))
    .limit(limit);
}
