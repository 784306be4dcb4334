// Running one prediction under the organization's one-at-a-time rule: a submit answered 400
// (another prediction is queued or running, maybe someone else's) waits and tries again instead of
// failing; an image still converting (409) is waited for the same way. Then it polls to the end.
import type { PredictionRecord, PredictionSubmission } from "../schema/api-records.ts";
import { sleep } from "../common/retry.ts";
import { ApiError, type Http } from "./http.ts";

interface PredictionRequest {
  image_id: string;
  model_id: string;
  params?: Record<string, unknown>;
}

export interface WaitOptions {
  /** First wait between polls; it grows to `maxPollMs` while nothing changes. */
  pollMs: number;
  maxPollMs: number;
  /** Why the client is waiting, e.g. the service's "A prediction is already running ..." */
  onWaiting?: (why: string) => void;
  /** Called before each request; throws to stop waiting (see interruption.ts). */
  checkpoint?: () => void;
  /** Ends a wait between requests early. */
  signal?: AbortSignal;
}

/** Waits between tries: `pollMs`, growing by half each time up to `maxPollMs`, with jitter. */
export function backoff(options: WaitOptions) {
  let wait = options.pollMs;
  return {
    next: () => {
      const ms = wait * (0.75 + Math.random() * 0.5);
      wait = Math.min(options.maxPollMs, wait * 1.5);
      return sleep(ms, options.signal);
    },
    reset: () => {
      wait = options.pollMs;
    },
  };
}

/** Submits when the organization has no other prediction running; answers the prediction id. */
export async function submitWhenFree(http: Http, request: PredictionRequest, options: WaitOptions): Promise<string> {
  const pause = backoff(options);
  for (;;) {
    options.checkpoint?.();
    try {
      return (await http.json<PredictionSubmission>("POST", "/predict", { json: request })).prediction_id;
    } catch (error) {
      if (!(error instanceof ApiError) || (error.status !== 400 && error.status !== 409)) throw error;
      options.onWaiting?.(error.detail);
      await pause.next();
    }
  }
}

/** A block-wise prediction's blocks (a whole slide's, run by any free runner); null for one pass. */
export type Blocks = NonNullable<PredictionRecord["blocks"]>;

/** The stage the service gives a block-wise prediction while its blocks run: "blocks 7 of 12". */
const BLOCKS_STAGE = /^blocks \d+ of \d+$/;

// Exported for its test only (test/client/block-progress.test.ts).
/** While the blocks run: "blocks 7 of 12 done (3 glass)". */
export function blocksDone(blocks: Blocks): string {
  return `blocks ${blocks.done} of ${blocks.total} done (${blocks.glass} glass)`;
}

/** Once they have all run: "12 blocks, 3 of them glass". */
export function blocksSummary(blocks: Pick<Blocks, "total" | "glass">): string {
  return `${blocks.total} block${blocks.total === 1 ? "" : "s"}, ${blocks.glass === 0 ? "none" : blocks.glass} of them glass`;
}

/**
 * What a progress line says of a prediction: `note`, its status and stage ("STARTED merging"), and
 * while its blocks run, `detail`, the blocks done of all and how many of them were glass, in place
 * of the stage's bare count. A note changes when the prediction moves on to something else; the
 * detail with each block (a log gets a line for the one, not for every one of a slide's hundreds).
 */
export function predictionNote(p: Pick<PredictionRecord, "status" | "stage" | "blocks">): { note: string; detail?: string } {
  if (p.blocks && (p.stage === null || BLOCKS_STAGE.test(p.stage))) return { note: p.status, detail: blocksDone(p.blocks) };
  return { note: p.stage ? `${p.status} ${p.stage}` : p.status };
}

/** Polls until COMPLETED or FAILED, reporting each answer (progress, stage) on the way. */
export async function pollPrediction(
  http: Http,
  predictionId: string,
  options: WaitOptions & { onUpdate?: (p: PredictionRecord) => void },
): Promise<PredictionRecord> {
  const pause = backoff(options);
  let last = "";
  for (;;) {
    options.checkpoint?.();
    const prediction = await http.json<PredictionRecord>("GET", `/predict/${predictionId}`);
    options.onUpdate?.(prediction);
    if (prediction.status === "COMPLETED" || prediction.status === "FAILED") return prediction;
    const seen = `${prediction.status} ${prediction.progress}`;
    if (seen !== last) pause.reset();
    last = seen;
    await pause.next();
  }
}
