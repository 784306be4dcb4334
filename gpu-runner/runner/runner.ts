// The runner loop: `concurrency` workers each lease a job, run it with heartbeats, and complete
// or fail it. A job that fails for its own reasons (an undecodable image, a broken model) is
// reported FAILED at once; anything else is handed back for another attempt. stop() asks for no
// new job, lets each lease request already open come back (a job it brings is released unstarted:
// abandoning the request would leave the worker granting a lease nobody receives), lets jobs in
// hand finish within the grace period, then hands the rest back.
import { isRetryableFault } from "../../schema/db.ts";
import type { LeasedJob } from "../../schema/internal-api.ts";
import type { RunnerConfig } from "./config.ts";
import { type InternalApi, LeaseLostError } from "./internal-api.ts";
import { type JobContext, JobStopped, JobTimedOut } from "./job-context.ts";
import { faultOf } from "./job-fault.ts";
import type { ModelCache } from "./model-cache.ts";
import { runMeasurement } from "./measure-job.ts";
import { runPreview } from "./preview-job.ts";
import { runPrediction } from "./predict-job.ts";
import { runBlock } from "./block-job.ts";
import { runMerge } from "./block-merge.ts";
import { sleep } from "../../common/retry.ts";
import { runTraining } from "./train-job.ts";

const LEASE_WAIT_SECONDS = 20;
/** On stop, how long an open lease request may take to come back before it is abandoned. */
const LEASE_RETURN_MS = (LEASE_WAIT_SECONDS + 10) * 1000;
/** Heartbeats at most this often when progress changes, and at least every lease / 3. */
const MIN_HEARTBEAT_MS = 1000;

/** Resolves once `done()` holds or `ms` have passed, whichever is first. */
async function waitFor(done: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!done() && Date.now() < deadline) await sleep(100);
}

interface RunnerStats {
  completed: number;
  failed: number;
  released: number;
}

export class Runner {
  private readonly config: RunnerConfig;
  private readonly api: InternalApi;
  private readonly models: ModelCache;
  private readonly log: (message: string) => void;
  private readonly shutdown = new AbortController();
  /** Aborts lease requests still open when stop() has waited long enough for them. */
  private readonly abandonLeases = new AbortController();
  private leasesOpen = 0;
  private readonly inFlight = new Set<AbortController>();
  readonly stats: RunnerStats = { completed: 0, failed: 0, released: 0 };

  constructor(config: RunnerConfig, api: InternalApi, models: ModelCache, log: (message: string) => void = console.error) {
    this.config = config;
    this.api = api;
    this.models = models;
    this.log = log;
  }

  get stopping(): AbortSignal {
    return this.shutdown.signal;
  }

  async run(): Promise<void> {
    this.log(
      `[runner] ${this.config.runnerId} pulling from ${this.config.workerUrl} (${this.config.concurrency} at a time, provider ${this.config.executionProvider})`,
    );
    await Promise.all(Array.from({ length: this.config.concurrency }, () => this.workLoop()));
  }

  /** Stops leasing; open lease requests come back, jobs in hand get the grace period, then are handed back. */
  async stop(): Promise<void> {
    if (this.shutdown.signal.aborted) return;
    this.log(`[runner] stopping: ${this.inFlight.size} job(s) in hand, ${this.config.shutdownGraceSeconds} s to finish`);
    this.shutdown.abort();
    const leasesBack = waitFor(() => this.leasesOpen === 0, LEASE_RETURN_MS).then(() => this.abandonLeases.abort());
    const jobsDone = waitFor(() => this.inFlight.size === 0, this.config.shutdownGraceSeconds * 1000).then(() => {
      for (const job of this.inFlight) job.abort(new JobStopped("the runner is shutting down"));
    });
    await Promise.all([leasesBack, jobsDone]);
  }

  private async workLoop(): Promise<void> {
    while (!this.shutdown.signal.aborted) {
      let job: LeasedJob | null;
      this.leasesOpen++;
      try {
        job = await this.api.lease(LEASE_WAIT_SECONDS, this.abandonLeases.signal);
      } catch (error) {
        if (this.shutdown.signal.aborted) return;
        this.log(`[runner] lease failed: ${(error as Error).message}`);
        await sleep(5000, this.shutdown.signal);
        continue;
      } finally {
        this.leasesOpen--;
      }
      if (job && this.shutdown.signal.aborted) {
        // If the release fails too, the lease simply expires: one attempt spent, nothing lost.
        await this.api.release(job).then(
          () => this.stats.released++,
          () => undefined,
        );
        return;
      }
      if (job) await this.process(job);
    }
  }

  async process(job: LeasedJob): Promise<void> {
    // Which runner works on which block of a slide is otherwise only in the jobs table.
    if (job.kind === "block") this.log(`[runner] block ${job.block.index + 1} of ${job.block.total} of prediction ${job.prediction_id} leased`);
    const stop = new AbortController();
    this.inFlight.add(stop);
    let progress = 0;
    let stage = "leased";
    let lastBeat = 0;
    let beating: Promise<void> | null = null;
    const beat = () => {
      if (beating) return;
      lastBeat = Date.now();
      beating = this.api
        .heartbeat(job, progress, stage)
        .catch((error) => {
          if (error instanceof LeaseLostError) stop.abort(error);
          else this.log(`[runner] heartbeat for ${job.job_id} failed: ${(error as Error).message}`);
        })
        .finally(() => (beating = null));
    };
    const timer = setInterval(beat, (this.config.leaseSeconds * 1000) / 3);
    const deadline = timeLimitTimer(job, stop);
    const ctx: JobContext = {
      api: this.api,
      models: this.models,
      trainingSeconds: this.config.trainingSeconds,
      executionProvider: this.config.executionProvider,
      trainingMemoryBytes: this.config.trainingMemoryBytes,
      inputBudget: this.config.inputBudget,
      maxInputBytes: this.config.maxInputBytes,
      singlePassPixels: this.config.singlePassPixels,
      blockMemoryBytes: this.config.blockMemoryBytes,
      log: this.log,
      progress: (fraction, name) => {
        progress = fraction;
        stage = name;
        if (Date.now() - lastBeat >= MIN_HEARTBEAT_MS) beat();
      },
      checkpoint: () => {
        if (stop.signal.aborted) throw stop.signal.reason;
      },
      signal: stop.signal,
    };
    const started = performance.now();
    const work = run(job, ctx);
    // A job past its time limit is reported at once (the worker fails it and its lease is released),
    // not at its next checkpoint; its slot stays taken until the work has stopped there.
    const timedOut = new Promise<never>((_, reject) =>
      stop.signal.addEventListener("abort", () => stop.signal.reason instanceof JobTimedOut && reject(stop.signal.reason), { once: true }),
    );
    try {
      const result = await Promise.race([work, timedOut]);
      ctx.checkpoint();
      await this.api.complete(job, result);
      this.stats.completed++;
      const ms = Math.round(performance.now() - started);
      const planned = "block_plan" in result ? result.block_plan : undefined;
      this.log(
        planned
          ? `[runner] prediction ${job.job_id} planned in ${ms} ms: ${planned.rows * planned.columns} blocks for any runner`
          : job.kind === "block"
            ? `[runner] block ${job.block.index + 1} of ${job.block.total} of prediction ${job.prediction_id} done in ${ms} ms`
            : `[runner] ${job.kind} ${job.job_id} completed in ${ms} ms`,
      );
    } catch (error) {
      await this.reportFailure(job, stop.signal.aborted ? stop.signal.reason : error);
    } finally {
      clearInterval(timer);
      clearTimeout(deadline);
      await work.catch(() => undefined);
      this.inFlight.delete(stop);
    }
  }

  private async reportFailure(job: LeasedJob, error: unknown): Promise<void> {
    const message = error instanceof Error ? error.message : String(error);
    if (error instanceof LeaseLostError) {
      this.log(`[runner] ${job.job_id}: lease lost (${message}); dropping it`);
      return;
    }
    const fault = faultOf(error);
    const retryable = isRetryableFault(fault);
    const prefix = { input: "", model: "model error: ", runner: error instanceof JobStopped ? "" : "runner error: ", service: "service unavailable: " }[fault];
    try {
      await this.api.fail(job, `${prefix}${message}`, fault);
      if (retryable) this.stats.released++;
      else this.stats.failed++;
      this.log(`[runner] ${job.job_id} ${retryable ? "handed back" : "failed"}: ${message}`);
    } catch (reportError) {
      // The lease will run out and the job will be offered again.
      this.log(`[runner] could not report ${job.job_id} (${(reportError as Error).message}); its lease will expire`);
    }
  }
}

/**
 * Stops the job when its time limit runs out (a second after the worker's, so the worker, which
 * counted the time left from its own clock, already holds it past the limit when the failure comes).
 */
function timeLimitTimer(job: LeasedJob, stop: AbortController): ReturnType<typeof setTimeout> | undefined {
  if (!job.time_limit) return undefined;
  const { seconds, left_seconds: left } = job.time_limit;
  return setTimeout(() => stop.abort(new JobTimedOut(`the job ran into its time limit of ${seconds} s`)), (left + 1) * 1000);
}

function run(job: LeasedJob, ctx: JobContext) {
  switch (job.kind) {
    case "prediction":
      return job.merge ? runMerge(job, ctx) : runPrediction(job, ctx);
    case "block":
      return runBlock(job, ctx);
    case "training":
      return runTraining(job, ctx);
    case "preview":
      return runPreview(job, ctx);
    case "measurement":
      return runMeasurement(job, ctx);
  }
}
