// The one job state machine. A job row is the truth; it moves only by conditional updates
// (UPDATE ... WHERE status = ... RETURNING), so concurrent requests resolve inside D1:
//
//   SUBMITTED --lease--> STARTED --complete--> COMPLETED
//       ^                  |  \--fail (final or out of attempts)--> FAILED
//       \--lease expired / retryable fail (attempts left)--/
//       \--lease withdrawn (never delivered; the attempt is not counted)--/
//
// Every SUBMITTED GPU job has a queue message as its wake-up; the message is only a hint, so a
// duplicate or stale one is harmless (leasing re-checks the row).
import { and, desc, eq, inArray, isNotNull, lt, sql } from "drizzle-orm";
import { jobs, type JobKind } from "../../schema/db.ts";
import type { Bindings, Organization } from "../env.ts";
import { HttpError } from "../errors.ts";
import { gpuJobQueue } from "../queues/gpu-job-queue.ts";
import { newId, randomToken } from "./crypto.ts";
import { database } from "./database.ts";
import { settings } from "./settings.ts";

export type Job = typeof jobs.$inferSelect;

const ACTIVE = ["SUBMITTED", "STARTED"] as const;
const ANALYSES: JobKind[] = ["prediction", "training"];
/** A SUBMITTED job whose wake-up is older than this is sent again (the message may be lost). */
const RESEND_AFTER_MS = 10 * 60 * 1000;

export function monthStart(now = new Date()): number {
  return Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
}

export interface SubmitSpec {
  kind: "prediction" | "training";
  imageId?: string;
  modelId: string;
  input?: unknown;
  /** Same key = identical submission. */
  dedupeKey: string;
  /** Identical active jobs with these statuses answer "skipped" instead of queueing a second run. */
  skipIfIdentical: readonly ("SUBMITTED" | "STARTED")[];
  /** Only one active job of this kind per organization. */
  exclusive: boolean;
}

/** Ids of what the job will produce, fixed at submission so every attempt writes the same place. */
function outputIds(kind: SubmitSpec["kind"]) {
  return kind === "prediction" ? { segmentationId: newId(), resultModelId: null } : { segmentationId: null, resultModelId: newId() };
}

export type SubmitOutcome = { job: Job; skipped: boolean };

/**
 * Creates a GPU job if the organization's rules allow it. The insert carries every rule in its
 * WHERE clause (no identical or, for exclusive kinds, any active job; the monthly analysis cap),
 * so twenty simultaneous submits create at most what the rules allow.
 */
export async function submitGpuJob(env: Bindings, org: Organization, spec: SubmitSpec): Promise<SubmitOutcome> {
  const db = database(env.DB);
  const now = Date.now();
  const id = newId();
  const output = outputIds(spec.kind);
  const inserted = await env.DB.prepare(
    `INSERT INTO jobs (id, org_id, kind, status, image_id, model_id, input, dedupe_key, attempts, max_attempts, created_at, enqueued_at,
                       segmentation_id, result_model_id)
     SELECT ?1, ?2, ?3, 'SUBMITTED', ?4, ?5, ?6, ?7, 0, ?8, ?9, ?9, ?13, ?14
     WHERE NOT EXISTS (SELECT 1 FROM jobs WHERE org_id = ?2 AND kind = ?3 AND status IN ('SUBMITTED', 'STARTED')
                         AND (?10 OR dedupe_key = ?7))
       AND (SELECT count(*) FROM jobs WHERE org_id = ?2 AND kind IN ('prediction', 'training') AND created_at >= ?11) < ?12
     RETURNING id`,
  )
    .bind(id, org.id, spec.kind, spec.imageId ?? null, spec.modelId, JSON.stringify(spec.input ?? null), spec.dedupeKey,
      settings(env).maxAttempts, now, spec.exclusive ? 1 : 0, monthStart(new Date(now)), org.analysisCap,
      output.segmentationId, output.resultModelId)
    .first<{ id: string }>();

  if (inserted) {
    const job = (await getJob(env.DB, org.id, id))!;
    await gpuJobQueue(env).send({ job_id: id });
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
  if (spec.exclusive && active.length > 0) {
    throw new HttpError(400, `A ${spec.kind} is already ${active[0].status === "STARTED" ? "running" : "queued"} for this organization (id ${active[0].id}); wait for it to finish`);
  }
  const used = await analysesThisMonth(env.DB, org.id);
  if (used >= org.analysisCap) {
    throw new HttpError(402, `Monthly analysis limit reached: ${used} of ${org.analysisCap} predictions and trainings used this month`);
  }
  // The blocking job finished between the insert and the checks: try once more.
  return submitGpuJob(env, org, spec);
}

export async function analysesThisMonth(d1: D1Database, orgId: string): Promise<number> {
  const [row] = await database(d1)
    .select({ n: sql<number>`count(*)` })
    .from(jobs)
    .where(and(eq(jobs.orgId, orgId), inArray(jobs.kind, ANALYSES), sql`${jobs.createdAt} >= ${monthStart()}`));
  return row.n;
}

export async function createConversionJob(env: Bindings, orgId: string, imageId: string): Promise<Job> {
  const now = Date.now();
  const [job] = await database(env.DB)
    .insert(jobs)
    .values({ id: newId(), orgId, kind: "conversion", imageId, modelId: null, dedupeKey: `conversion:${imageId}`, maxAttempts: settings(env).maxAttempts, createdAt: now, enqueuedAt: now })
    .returning();
  await env.CONVERSIONS.send({ job_id: job.id }, { contentType: "json" });
  return job;
}

export async function getJob(d1: D1Database, orgId: string, id: string): Promise<Job | null> {
  const [job] = await database(d1).select().from(jobs).where(and(eq(jobs.id, id), eq(jobs.orgId, orgId))).limit(1);
  return job ?? null;
}

export async function getJobById(d1: D1Database, id: string): Promise<Job | null> {
  const [job] = await database(d1).select().from(jobs).where(eq(jobs.id, id)).limit(1);
  return job ?? null;
}

/** SUBMITTED -> STARTED for one holder; null if someone else got there first or the job is done. */
export async function startAttempt(d1: D1Database, id: string, holder: string, leaseMs: number): Promise<Job | null> {
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
      progress: 0,
      stage: "leased",
    })
    .where(and(eq(jobs.id, id), eq(jobs.status, "SUBMITTED")))
    .returning();
  return job ?? null;
}

const holding = (id: string, leaseToken: string) => and(eq(jobs.id, id), eq(jobs.status, "STARTED"), eq(jobs.leaseToken, leaseToken));

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
  if (withdrawn) await gpuJobQueue(env).send({ job_id: id });
  return withdrawn ?? null;
}

export async function heartbeat(d1: D1Database, id: string, leaseToken: string, leaseMs: number, progress?: number, stage?: string): Promise<Job | null> {
  const [job] = await database(d1)
    .update(jobs)
    .set({ leaseExpiresAt: Date.now() + leaseMs, ...(progress !== undefined && { progress }), ...(stage !== undefined && { stage }) })
    .where(holding(id, leaseToken))
    .returning();
  return job ?? null;
}

/** The update that completes a job, for callers that batch it with the record it produces. */
export function completeStatement(d1: D1Database, id: string, leaseToken: string, result: { result: unknown }) {
  return database(d1)
    .update(jobs)
    .set({
      status: "COMPLETED",
      progress: 1,
      stage: "done",
      finishedAt: Date.now(),
      leaseToken: null,
      leaseExpiresAt: null,
      reason: null,
      result: result.result,
    })
    .where(holding(id, leaseToken))
    .returning();
}

/**
 * Ends an attempt that failed. A retryable failure with attempts left goes back to SUBMITTED
 * (and gets a new wake-up); anything else is FAILED with the reason.
 */
export async function failAttempt(env: Bindings, id: string, leaseToken: string, reason: string, retryable: boolean): Promise<Job | null> {
  const now = Date.now();
  const [job] = await database(env.DB)
    .update(jobs)
    .set({
      status: sql`CASE WHEN ${retryable ? 1 : 0} AND ${jobs.attempts} < ${jobs.maxAttempts} THEN 'SUBMITTED' ELSE 'FAILED' END`,
      finishedAt: sql`CASE WHEN ${retryable ? 1 : 0} AND ${jobs.attempts} < ${jobs.maxAttempts} THEN NULL ELSE ${now} END`,
      enqueuedAt: now,
      reason,
      leaseToken: null,
      leaseHolder: null,
      leaseExpiresAt: null,
    })
    .where(holding(id, leaseToken))
    .returning();
  if (job?.status === "SUBMITTED" && job.kind !== "conversion") await gpuJobQueue(env).send({ job_id: id });
  return job ?? null;
}

/**
 * Expired leases: back to SUBMITTED with a new wake-up, or FAILED once out of attempts. Also
 * re-sends the wake-up of SUBMITTED jobs whose message is old (a send that was lost). Runs from
 * the cron trigger and before each lease, so it needs no scheduler locally.
 */
export async function sweepJobs(env: Bindings): Promise<void> {
  const db = database(env.DB);
  const now = Date.now();
  const outOfAttempts = sql`${jobs.attempts} >= ${jobs.maxAttempts}`;
  const expired = await db
    .update(jobs)
    .set({
      status: sql`CASE WHEN ${outOfAttempts} THEN 'FAILED' ELSE 'SUBMITTED' END`,
      reason: sql`'Lease expired after attempt ' || ${jobs.attempts} || ' (runner ' || coalesce(${jobs.leaseHolder}, '?') || ' stopped reporting)'`,
      finishedAt: sql`CASE WHEN ${outOfAttempts} THEN ${now} ELSE NULL END`,
      enqueuedAt: now,
      leaseToken: null,
      leaseHolder: null,
      leaseExpiresAt: null,
    })
    .where(and(eq(jobs.status, "STARTED"), inArray(jobs.kind, ANALYSES), isNotNull(jobs.leaseExpiresAt), lt(jobs.leaseExpiresAt, now)))
    .returning({ id: jobs.id, status: jobs.status });
  const stale = await db
    .update(jobs)
    .set({ enqueuedAt: now })
    .where(and(eq(jobs.status, "SUBMITTED"), inArray(jobs.kind, ANALYSES), lt(jobs.enqueuedAt, now - RESEND_AFTER_MS)))
    .returning({ id: jobs.id, status: jobs.status });
  const queue = gpuJobQueue(env);
  for (const job of [...expired, ...stale]) if (job.status === "SUBMITTED") await queue.send({ job_id: job.id });
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
