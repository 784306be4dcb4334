import type { LeasedPrediction, LeasedPreview } from "../../schema/internal-api.ts";
import type { ExecutionProviderChoice } from "../engine/model.ts";
import type { InputBudget } from "./input-thread/input-thread.ts";
import type { InternalApi } from "./internal-api.ts";
import type { ModelCache } from "./model-cache.ts";

/** What a job handler gets from the runner loop. */
export interface JobContext {
  api: InternalApi;
  models: ModelCache;
  /** Records progress (0..1) and stage; the loop reports them with its heartbeats. */
  progress(fraction: number, stage: string): void;
  /** Throws if the job must stop (lease lost, runner shutting down, time limit). */
  checkpoint(): void;
  /**
   * Aborts when the job must stop: long stages take it and stop at once (the compute threads are
   * terminated), instead of at the next checkpoint.
   */
  signal: AbortSignal;
  trainingSeconds: number;
  /** Where inference and training run: the runner's `--provider` (auto: CUDA, else WebGPU, else CPU). */
  executionProvider: ExecutionProviderChoice;
  /** Bytes of prepared training images a training job holds at once. */
  trainingMemoryBytes: number;
  /** Largest image file a job downloads. */
  maxInputBytes: number;
  /** Images of more pixels are read in parts and segmented block by block. */
  singlePassPixels: number;
  blockMemoryBytes: number;
  /** Bounds on decoding an image or rasterising ROIs, done off the main loop (input-thread/). */
  inputBudget: InputBudget;
  log(message: string): void;
}

export class JobStopped extends Error {}

/**
 * The job ran into its time limit (its lease's `time_limit`): stopped and reported failed; the worker
 * fails it for good with the limit as its reason, and never leases it again.
 */
export class JobTimedOut extends JobStopped {}

/** A fresh signed URL of the job's image, for reads that outlast the one its lease came with. */
export function renewedImageUrl(job: LeasedPrediction | LeasedPreview, ctx: JobContext): () => Promise<string> {
  return async () => ((await ctx.api.urls(job)) as LeasedPrediction | LeasedPreview).image.url;
}
