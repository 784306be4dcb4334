// The loop shared by the CLI and fine-tuning: steps until a step or time budget is spent,
// validating and checkpointing on schedule.
import type { TrainingState } from "./checkpoint.ts";
import type { ImageTiles } from "./held-out-tiles.ts";
import type { Trainer } from "./trainer.ts";

/** An AP per set, and their mean under "mean". */
export type ApBySet = { [set: string]: number; mean: number };

export interface ValidationScores {
  /** AP at IoU 0.5 per set, and their mean under "mean". */
  ap50: ApBySet;
  /** AP at IoU 0.75, the same way (a stricter look at outline quality; the guard selects on ap50). */
  ap75?: ApBySet;
  /** Each image's AP@0.5 counts tile by tile, in the images' order: what fine-tuning's guard weighs a gain on (gain-evidence.ts). */
  tiles?: ImageTiles[];
}

export type TrainingEvent =
  | { kind: "step"; step: number; totalSteps: number; loss: number; learningRate: number; seconds: number }
  | { kind: "validation"; step: number; scores: ValidationScores; best: boolean; params: Float32Array }
  | { kind: "checkpoint"; step: number };

export interface LoopOptions {
  /** Stop after this step number (1-based, inclusive). */
  lastStep: number;
  /** Stop once this much wall time has passed in this call. */
  seconds?: number;
  validateEvery?: number;
  /** Validate after this step, besides every validateEvery (fine-tuning's plan moves its validations as it learns the timings). */
  validateWhen?: (step: number) => boolean;
  validate?: (params: Float32Array) => Promise<ValidationScores>;
  checkpointEvery?: number;
  checkpoint?: (state: TrainingState) => void;
  onEvent?: (event: TrainingEvent) => void;
}

interface LoopResult {
  /** Weights with the best mean validation AP seen in this call (the last weights without validation). */
  bestParams: Float32Array;
  bestScores?: ValidationScores;
  lastScores?: ValidationScores;
}

export async function trainLoop(trainer: Trainer, options: LoopOptions): Promise<LoopResult> {
  const state = trainer.state;
  const started = performance.now();
  const elapsed = () => (performance.now() - started) / 1000;
  const history = state.history as {
    wallSeconds?: number;
    losses?: [number, number][];
    validations?: { step: number; ap50: Record<string, number> }[];
    bestMeanAp?: number;
  };
  const wallBefore = history.wallSeconds ?? 0;
  history.losses ??= [];
  history.validations ??= [];
  let bestParams = state.params.slice();
  let bestScores: ValidationScores | undefined;
  let lastScores: ValidationScores | undefined;
  let lossSum = 0,
    lossCount = 0;

  const runValidation = async () => {
    if (!options.validate) return;
    const scores = await options.validate(state.params);
    lastScores = scores;
    history.validations!.push({ step: state.step, ap50: scores.ap50 });
    // Compared with the best of the whole run, earlier sessions of a resumed run included.
    const best = scores.ap50.mean > (history.bestMeanAp ?? -Infinity);
    if (best) {
      bestScores = scores;
      bestParams = state.params.slice();
      history.bestMeanAp = scores.ap50.mean;
    }
    options.onEvent?.({ kind: "validation", step: state.step, scores, best, params: state.params });
  };

  while (state.step < options.lastStep && !(options.seconds !== undefined && elapsed() >= options.seconds)) {
    const { loss, learningRate } = await trainer.step();
    lossSum += loss;
    lossCount++;
    history.wallSeconds = wallBefore + elapsed();
    if (state.step % 10 === 0 || state.step === options.lastStep) {
      history.losses.push([state.step, lossSum / lossCount]);
      lossSum = lossCount = 0;
    }
    options.onEvent?.({ kind: "step", step: state.step, totalSteps: options.lastStep, loss, learningRate, seconds: elapsed() });
    if ((options.validateEvery && state.step % options.validateEvery === 0) || options.validateWhen?.(state.step)) await runValidation();
    if (options.checkpoint && options.checkpointEvery && state.step % options.checkpointEvery === 0) {
      options.checkpoint(state);
      options.onEvent?.({ kind: "checkpoint", step: state.step });
    }
  }
  if (options.validate && history.validations.at(-1)?.step !== state.step) await runValidation();
  if (!options.validate) bestParams = state.params.slice();
  options.checkpoint?.(state);
  return { bestParams, bestScores, lastScores };
}
