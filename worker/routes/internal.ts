// The runner's API. Runners lease GPU jobs, heartbeat, fetch signed URLs, and complete, fail or
// release (hand back unstarted) them.
import { Hono } from "hono";
import { pathId } from "../../schema/api.ts";
import { completeBody, failBody, heartbeatBody, leaseBody, releaseBody, urlsBody } from "../../schema/internal-api.ts";
import type { AppContext, AppEnv } from "../env.ts";
import { HttpError, notFound } from "../errors.ts";
import { failAttempt, getJobById, heartbeat, isLeaseToken, type Job, JobFaultError, withdrawAttempt } from "../services/jobs.ts";
import { completeJob, leaseWithPayload, runnerPayload } from "../services/runner-jobs.ts";
import { reaches } from "../services/runner-scopes.ts";
import { settings } from "../services/settings.ts";
import { validate } from "../validation.ts";

export const internal = new Hono<AppEnv>();

const origin = (c: AppContext) => new URL(c.req.url).origin;

/** The runner's job: one of another organization than a scoped runner's is answered as a missing one. */
async function gpuJob(c: AppContext): Promise<Job> {
  const id = c.req.param("id") ?? "";
  const job = await getJobById(c.env.DB, id);
  if (!job || job.kind === "conversion" || !reaches(c.get("runner"), job.orgId)) throw notFound("Job", id);
  return job;
}

const leaseLost = (job: Job) => new HttpError(409, `Job ${job.id} is not held by this lease (it is ${job.status})`);

internal.post("/jobs/lease", validate("json", leaseBody), async (c) => {
  const body = c.req.valid("json");
  const leased = await leaseWithPayload(c.env, origin(c), body.runner_id, {
    waitMs: body.wait_seconds * 1000,
    leaseSeconds: body.lease_seconds,
    signal: c.req.raw.signal,
    orgIds: c.get("runner").orgIds,
  });
  return leased ? c.json(leased) : c.body(null, 204);
});

internal.post("/jobs/:id/heartbeat", validate("param", pathId), validate("json", heartbeatBody), async (c) => {
  const job = await gpuJob(c);
  const body = c.req.valid("json");
  const leaseMs = (body.lease_seconds ?? settings(c.env).leaseSeconds) * 1000;
  const held = await heartbeat(c.env.DB, job.id, body.lease_token, leaseMs, body.progress, body.stage);
  if (!held) throw leaseLost(job);
  return c.json({ job_id: held.id, lease_expires_at: held.leaseExpiresAt });
});

internal.post("/jobs/:id/urls", validate("param", pathId), validate("json", urlsBody), async (c) => {
  const job = await gpuJob(c);
  const { lease_token } = c.req.valid("json");
  if (job.status !== "STARTED" || !(await isLeaseToken(job, lease_token))) throw leaseLost(job);
  try {
    return c.json(await runnerPayload(c.env, origin(c), job));
  } catch (error) {
    // Its inputs went away during the attempt: the job ends here, and its runner hears it lost the lease.
    if (!(error instanceof JobFaultError)) throw error;
    const failed = await failAttempt(c.env, job.id, lease_token, error.message, error.fault);
    throw leaseLost(failed ?? job);
  }
});

internal.post("/jobs/:id/complete", validate("param", pathId), validate("json", completeBody), async (c) => {
  const job = await completeJob(c.env, await gpuJob(c), c.req.valid("json"));
  return c.json({ job_id: job.id, status: job.status });
});

internal.post("/jobs/:id/release", validate("param", pathId), validate("json", releaseBody), async (c) => {
  const job = await gpuJob(c);
  const after = await withdrawAttempt(c.env, job.id, c.req.valid("json").lease_token);
  if (!after) throw leaseLost(job);
  return c.json({ job_id: after.id, status: after.status, attempts: after.attempts });
});

internal.post("/jobs/:id/fail", validate("param", pathId), validate("json", failBody), async (c) => {
  const job = await gpuJob(c);
  const body = c.req.valid("json");
  const fault = body.fault ?? (body.retryable ? "runner" : "input");
  const after = await failAttempt(c.env, job.id, body.lease_token, body.reason, fault);
  if (!after) throw leaseLost(job);
  return c.json({ job_id: after.id, status: after.status, attempts: after.attempts });
});
