// The runner's entry point for custom models: fine-tunes a base model on (image, labels) pairs
// within a step or time budget and reports AP@0.5 on held-out pairs before and after.
import { readFileSync } from "node:fs";
import type { DecodedImage } from "../engine/decode/index.ts";
import { parseManifest } from "../engine/model.ts";
import type { ModelManifest } from "../engine/model.ts";
import { weightsFromModel } from "../network/weights-from-model.ts";
import { toSingleChannel } from "./labelled-images.ts";
import type { LabelledImage } from "./labelled-images.ts";
import { exportModel } from "./model-export.ts";
import { prepareImages } from "./prepare-image.ts";
import { trainLoop } from "./train-loop.ts";
import { defaultTrainingConfig, FINE_TUNE_PEAK_LEARNING_RATE } from "./training-config.ts";
import { freshTrainingState, Trainer } from "./trainer.ts";
import { validationAp, validationImages } from "./validate.ts";
import { validationIds } from "./validation-split.ts";

export interface FineTuneRequest {
  /** Path of <name>.onnx (manifest beside it), or the bytes and manifest. */
  base: string | { onnx: Uint8Array; manifest: ModelManifest };
  pairs: { image: DecodedImage; labels: Uint32Array }[];
  budget: { steps?: number; seconds?: number };
  /** Share of pairs held out for validation (default 0.2; at least one pair when there are two or more). */
  validationFraction?: number;
  seed?: number;
  /** Peak learning rate (default FINE_TUNE_PEAK_LEARNING_RATE). */
  learningRate?: number;
  batchSize?: number;
  name?: string;
  version?: string;
  threads?: number;
  onProgress?: (progress: { step: number; totalSteps: number; loss: number; fraction: number }) => void;
}

export interface FineTuneResult {
  onnx: Uint8Array;
  manifest: ModelManifest;
  steps: number;
  seconds: number;
  /** Mean AP@0.5 over the held-out pairs; undefined when none could be held out. */
  validation: { apBefore: number | undefined; apAfter: number | undefined; heldOut: number };
}

function loadBase(base: FineTuneRequest["base"]): { onnx: Uint8Array; manifest: ModelManifest } {
  if (typeof base !== "string") return base;
  const stem = base.endsWith(".onnx") ? base.slice(0, -5) : base;
  return { onnx: new Uint8Array(readFileSync(`${stem}.onnx`)), manifest: parseManifest(readFileSync(`${stem}.json`, "utf8"), `${stem}.json`) };
}

/** Steps timed before a time-only budget is turned into a schedule length. */
const TIMED_STEPS = 3;

export async function fineTune(request: FineTuneRequest): Promise<FineTuneResult> {
  const { steps: stepBudget, seconds } = request.budget;
  if (stepBudget === undefined && seconds === undefined) throw new Error("fine-tuning needs a budget: steps, seconds or both");
  if (stepBudget !== undefined && !(Number.isInteger(stepBudget) && stepBudget > 0)) throw new Error(`budget.steps must be a positive integer, got ${stepBudget}`);
  if (seconds !== undefined && !(seconds > 0)) throw new Error(`budget.seconds must be positive, got ${seconds}`);
  if (request.pairs.length === 0) throw new Error("fine-tuning needs at least one (image, labels) pair");

  const base = loadBase(request.base);
  const { network, params } = weightsFromModel(base.onnx);
  const pairs: LabelledImage[] = request.pairs.map(({ image, labels }, i) => {
    if (labels.length !== image.width * image.height) throw new Error(`pair ${i}: labels hold ${labels.length} values for a ${image.width}x${image.height} image`);
    return { id: `custom/${String(i).padStart(5, "0")}`, width: image.width, height: image.height, image: toSingleChannel(image), labels };
  });
  const seed = request.seed ?? 1;
  const held = request.pairs.length >= 2 ? validationIds(pairs.map((p) => p.id), request.validationFraction ?? 0.2, seed) : new Set<string>();
  const trainPairs = pairs.filter((p) => !held.has(p.id));
  const heldOut = validationImages(pairs.filter((p) => held.has(p.id)));

  // With only a time budget, the schedule's length is set once the first steps have been timed.
  const plannedSteps = stepBudget ?? 100_000;
  const config = defaultTrainingConfig(plannedSteps, {
    network,
    seed,
    modelDiameter: base.manifest.diameter,
    cropSize: base.manifest.tileSize,
    batchSize: request.batchSize ?? 4,
    schedule: { peak: request.learningRate ?? FINE_TUNE_PEAK_LEARNING_RATE, warmupSteps: Math.min(10, Math.ceil(plannedSteps / 10)), totalSteps: plannedSteps, finalFraction: 0.1 },
  });
  const state = freshTrainingState(config, params);
  const trainer = await Trainer.create(state, prepareImages(trainPairs, config.modelDiameter), { intraOpNumThreads: request.threads ?? 2, interOpNumThreads: 1 });

  const apBefore = heldOut.length ? (await validationAp(config, params, heldOut)).ap50.mean : undefined;
  const started = performance.now();
  await trainLoop(trainer, {
    lastStep: plannedSteps,
    seconds,
    onEvent: (event) => {
      if (event.kind !== "step") return;
      const elapsed = (performance.now() - started) / 1000;
      if (seconds !== undefined && event.step === TIMED_STEPS) {
        const fitting = Math.max(TIMED_STEPS + 1, Math.floor((seconds * event.step) / elapsed));
        config.schedule.totalSteps = Math.min(config.schedule.totalSteps, fitting);
      }
      const fraction = Math.max(stepBudget ? event.step / stepBudget : 0, seconds ? elapsed / seconds : 0);
      request.onProgress?.({ step: event.step, totalSteps: stepBudget ?? Math.round(event.step / Math.max(fraction, 1e-9)), loss: event.loss, fraction: Math.min(1, fraction) });
    },
  });
  const trainedSeconds = (performance.now() - started) / 1000;
  const apAfter = heldOut.length ? (await validationAp(config, state.params, heldOut)).ap50.mean : undefined;
  const model = exportModel(config, state.params, request.name ?? `${base.manifest.name}-finetuned`, request.version ?? new Date().toISOString(), {
    source: `fine-tuned from ${base.manifest.name}@${base.manifest.version} by this project's trainer, ${state.step} steps on ${trainPairs.length} images`,
    license: base.manifest.provenance.license,
    trainedOn: [...(base.manifest.provenance.trainedOn ?? []), `${trainPairs.length} user images`],
    createdAt: new Date().toISOString(),
  });
  return { ...model, steps: state.step, seconds: trainedSeconds, validation: { apBefore, apAfter, heldOut: heldOut.length } };
}
