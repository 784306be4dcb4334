// Running one prediction under the organization's one-at-a-time rule: a submit answered 400
// (another prediction is queued or running, maybe someone else's) waits and tries again instead of
// failing; an image still converting (409) is waited for the same way. Then it polls to the end.
import type { PredictionRecord, PredictionSubmission } from "../schema/api-records.ts";
import { sleep } from "../common/retry.ts";
import { ApiError, type Http } from "./http.ts";

export interface PredictionRequest {
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
