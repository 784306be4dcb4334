// How a runner gets work: pull a wake-up from the GPU queue, start an attempt on the job row it
// names, ack the message; when the queue offers no job, lease a block task of a block-wise
// prediction (block-tasks.ts), whose rows need no wake-up. Jobs come first, so a small prediction
// submitted while a slide's blocks run starts as soon as a runner finishes its block. A message whose job cannot be started (done, or taken) is stale and is
// acked too; the row, not the message, decides. A runner that hangs up (its request's signal
// aborts: a shutdown, a crash) stops the wait, and a lease granted as it hung up is withdrawn, so
// no job sits leased to nobody until its lease expires.
import type { Bindings } from "../env.ts";
import { gpuJobQueue } from "../queues/gpu-job-queue.ts";
import { leaseBlockTask } from "./block-tasks.ts";
import { type Job, startAttempt, startNextOfOrganizations, sweepJobs, withdrawAttempt } from "./jobs.ts";
import { settings } from "./settings.ts";

/** How often a waiting lease looks again: D1 locally is cheap; Cloudflare's pull API is rate-limited. */
const POLL_INTERVAL_MS = { local: 100, cloudflare: 1000 } as const;

export interface LeaseOptions {
  waitMs: number;
  leaseSeconds?: number;
  /** The runner's request; once it aborts nobody is listening for the answer. */
  signal?: AbortSignal;
  /**
   * A scoped runner's organizations (runner-scopes.ts): it takes their jobs from the jobs table, not
   * from the queue, whose wake-ups name any organization's (one it left unacked would hold that job
   * back for a whole lease). The wake-ups of the jobs it takes are acked as stale by whoever pulls them.
   */
  orgIds?: string[] | null;
}

export async function leaseNextJob(env: Bindings, holder: string, options: LeaseOptions): Promise<Job | null> {
  const { signal } = options;
  const leaseMs = (options.leaseSeconds ?? settings(env).leaseSeconds) * 1000;
  const queue = gpuJobQueue(env);
  const deadline = Date.now() + options.waitMs;
  await sweepJobs(env);
  for (;;) {
    if (signal?.aborted) return null;
    const scoped = options.orgIds ?? null;
    const message = scoped ? null : await queue.pull(leaseMs);
    let job: Job | null = null;
    if (message) {
      job = await startAttempt(env.DB, message.body.job_id, holder, leaseMs);
      await queue.ack(message.leaseId);
    } else {
      job = (scoped && (await startNextOfOrganizations(env.DB, scoped, holder, leaseMs))) || (await leaseBlockTask(env, holder, leaseMs, scoped));
    }
    if (job && signal?.aborted) {
      await withdrawAttempt(env, job.id, job.leaseToken!);
      return null;
    }
    if (job) return job;
    if (message) continue;
    const interval = POLL_INTERVAL_MS[env.JOB_QUEUE_MODE] ?? POLL_INTERVAL_MS.cloudflare;
    if (Date.now() + interval > deadline) return null;
    await new Promise((resolve) => setTimeout(resolve, interval));
  }
}
