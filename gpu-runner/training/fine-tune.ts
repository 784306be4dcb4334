// The runner's entry point for custom models: fine-tunes a base model on (image, labels) pairs
// within a step or time budget and reports AP@0.5 and AP@0.75 before and after on regions of the
// images kept apart from training (issue #46: evidence drawn by objects, fine-tune-runs.ts).
// Guard: the weights are validated a few times during the run; the best validated weights are
// weighed against the base on the judged regions tile by tile, and are returned only where the
// gain's 95% bootstrap interval lies above zero (gain-evidence.ts). Where one fold of regions holds
// too few objects, the folds rotate: each is trained and judged in turn, the evidence pooled, and
// the weights returned are trained on everything; where one fold is enough, weights the verdict
// keeps are then trained on everything for a fifth of the budget, the judged regions included,
// so no annotated object is left out of the model returned. A run that scores lower returns the base weights
// unchanged; one higher by what could be noise returns its weights marked unverified, for the user
// to compare and choose (fine-tune-guard.ts, returnedWeights); each says so, with how much it saw
// (regions, objects, tiles) and the gain's interval.
// Recipe: pairs that are mostly stained histology train a colour network (a one-channel base
// widened) with slide variants and the microscope augmentation; others train the base as it is
// (fine-tune-recipe.ts). The base is always scored, and kept, as it is served.
import { readFileSync } from "node:fs";
import type { DecodedImage } from "../../common/decode/index.ts";
import { parseManifest } from "../engine/model.ts";
import type { ExecutionProvider, ExecutionProviderChoice, ModelManifest, ModelReads } from "../engine/model.ts";
import type { Modality } from "../engine/modality.ts";
import { expandToColour } from "../network/colour-weights.ts";
import { weightsFromModel } from "../network/weights-from-model.ts";
import { fineTuneRecipe } from "./fine-tune-recipe.ts";
import { slideVariants } from "./stain-augment.ts";
import { labelledVariant, toModelInput, variantCount } from "./labelled-images.ts";
import type { ImageVariants, LabelledImage } from "./labelled-images.ts";
import { exportModel } from "./model-export.ts";
import type { PreparedImage } from "./augment.ts";
import { prepareImageInThread, preparingDiameters } from "./prepare-image.ts";
import { PreparedImageCache, preparedImageBytes } from "./prepared-image-cache.ts";
import type { PreparedImageCacheStats } from "./prepared-image-cache.ts";
import { fineTuneNote, keepsLearnedSize, returnedWeights, stepsThatFit } from "./fine-tune-guard.ts";
import { gainEvidence, MIN_HELD_OUT_OBJECTS } from "./gain-evidence.ts";
import type { GainEvidence } from "./gain-evidence.ts";
import { trainLoop } from "./train-loop.ts";
import type { LoopOptions, ValidationScores } from "./train-loop.ts";
import { defaultTrainingConfig, FINE_TUNE_PEAK_LEARNING_RATE } from "./training-config.ts";
import { freshTrainingState, Trainer } from "./trainer.ts";
import { autoDiameterAp, validationAp } from "./validate.ts";
import type { ValidationImage } from "./validate.ts";
import { type EvidenceKind, objectsIn, planRuns, type RunPlan } from "./fine-tune-runs.ts";
import { cropLabelled } from "./labelled-crop.ts";
import { type ImageObjects, type ImageRegion, objectsAlong } from "./region-split.ts";
import type { TrainingConfig } from "./training-config.ts";
import { InputError } from "../engine/faults.ts";
import { medianObjectDiameter } from "../engine/object-diameter.ts";
import { manifestReadsAs, networkReads } from "./network-input.ts";
import { contentOrder, pairFingerprint } from "./pair-order.ts";

function medianOf(values: number[]): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

interface TrainingPair {
  image: DecodedImage;
  labels: Uint32Array;
}

/**
 * Reads one (image, labels) pair, each time it is called: fine-tuning holds no pair, only the
 * prepared images its memory budget allows, and reads a pair again when it needs it again.
 */
export type TrainingPairSource = () => TrainingPair | Promise<TrainingPair>;

/** Memory for prepared training images when a request sets none: 2 GiB, about 165 megapixels. */
export const DEFAULT_TRAINING_MEMORY_BYTES = 2 * 2 ** 30;

interface FineTuneRequest {
  /** Path of <name>.onnx (manifest beside it), or the bytes and manifest. */
  base: string | { onnx: Uint8Array; manifest: ModelManifest };
  pairs: TrainingPairSource[];
  budget: { steps?: number; seconds?: number };
  /**
   * Bytes of prepared training images held at once (default DEFAULT_TRAINING_MEMORY_BYTES; a
   * prepared image takes preparedImageBytes: 13 bytes a pixel, 21 for a colour model). Past it the least recently drawn
   * are dropped and prepared again when drawn again; one image being read adds its own decoding.
   */
  memoryBudgetBytes?: number;
  /**
   * Whether regions of the images are held out to judge the weights (default true): by the split
   * by regions (fine-tune-runs.ts). false: nothing is judged, and the weights after the last step
   * are returned unvalidated.
   */
  holdOut?: boolean;
  /** Seeds the split by regions and every random draw of the training (default DEFAULT_TRAINING_SEED). */
  seed?: number;
  /** Peak learning rate (default: the base manifest's fineTuneLearningRate, else the recipe's, else FINE_TUNE_PEAK_LEARNING_RATE). */
  learningRate?: number;
  batchSize?: number;
  name?: string;
  version?: string;
  threads?: number;
  /** Where the train steps run (default the CPU; "auto": CUDA, else WebGPU, else CPU). */
  executionProvider?: ExecutionProviderChoice;
  /** Validations of the held-out pairs during the run, besides the one before (default 4, the last at the end). */
  validations?: number;
  onProgress?: (progress: { step: number; totalSteps: number; loss: number; fraction: number }) => void;
  /** Stops the preparation of an image at once (its compute thread is terminated). */
  signal?: AbortSignal;
}

interface FineTuneResult {
  onnx: Uint8Array;
  manifest: ModelManifest;
  steps: number;
  seconds: number;
  /** The prepared images' memory: budget, most held at once, preparations (more than the images when some were dropped and prepared again). */
  memory: PreparedImageCacheStats;
  /** Where its train steps ran. */
  executionProvider: ExecutionProvider;
  /** The schedule's peak learning rate: the request's, else the base manifest's, else the recipe's (fine-tune-recipe.ts), else the trainer's default. */
  learningRate: number;
  /** How it trained, in words (fine-tune-recipe.ts): "standard: Cellpose augmentation", or on stained pairs "stained: colour input, stain variants, microscope augmentation". */
  recipe: string;
  /**
   * Mean AP@0.5 over the judged regions (undefined when nothing was judged): of the base
   * (apBefore), of the returned weights (apAfter), of the weights after the last step (apLastStep);
   * ap75Before and ap75After: the same at IoU 0.75. chosenStep is the step of the returned weights (0: the
   * base weights came back unchanged); evidence is what the guard weighed: the base against the
   * best validated fine-tuned weights (candidateStep), tile by tile, with the gain's interval and
   * the verdict; note says in words what happened, for the user.
   */
  validation: {
    apBefore: number | undefined;
    apAfter: number | undefined;
    apLastStep: number | undefined;
    ap75Before: number | undefined;
    ap75After: number | undefined;
    chosenStep: number;
    candidateStep: number;
    /** Steps the kept weights trained on every region after the verdict, the judged ones too (0: none; chosenStep counts them). */
    thenOnEverything: number;
    /** Regions judged (bands of the images, or whole images), pooled over the folds where they rotate. */
    heldOut: number;
    /** How the judged part was drawn (fine-tune-runs.ts), the folds the objects were split into, and the images judged. */
    heldOutBy: EvidenceKind;
    folds: number;
    judgedImages: number;
    /** The whole set was below the guard's minimum: the figures are on the images trained on. */
    onTrainingImage: boolean;
    /** The fine-tuned weights came back on a difference that could be noise: the user compares and chooses (fine-tune-guard.ts, returnedWeights). */
    unverified: boolean;
    evidence: GainEvidence | undefined;
    note: string;
  };
}

function loadBase(base: FineTuneRequest["base"]): { onnx: Uint8Array; manifest: ModelManifest } {
  if (typeof base !== "string") return base;
  const stem = base.endsWith(".onnx") ? base.slice(0, -5) : base;
  return { onnx: new Uint8Array(readFileSync(`${stem}.onnx`)), manifest: parseManifest(readFileSync(`${stem}.json`, "utf8"), `${stem}.json`) };
}

/** The base as the result when no fine-tuned weights beat it: its own bytes and manifest, under the new model's name. */
function keptBaseModel(
  base: { onnx: Uint8Array; manifest: ModelManifest },
  name: string,
  version: string,
  provenance: ModelManifest["provenance"],
): { onnx: Uint8Array; manifest: ModelManifest } {
  // The base's own start for diameter "auto" was learnt from other images; the user's are weighed below.
  const { trainedObjectDiameter: _, description: _public, ...manifest } = base.manifest;
  return { onnx: base.onnx, manifest: { ...manifest, name, version, provenance } };
}

/** A pair as the network reads it (one channel or colour, made for its modality). */
function asLabelled(id: string, { image, labels }: TrainingPair, reads: ModelReads): LabelledImage {
  const { data, channels, modality } = toModelInput(image, reads);
  return { id, width: image.width, height: image.height, image: data, channels, labels, modality };
}

/** What the first pass over the pairs learns of each. */
interface ScannedPair {
  width: number;
  height: number;
  /** The decoded image's channels (slide variants need colour). */
  imageChannels: number;
  modality: Modality;
  /** Median object diameter of its labels (0: no objects). */
  diameter: number;
  /** Its objects as the split by regions sees them. */
  objects: ImageObjects;
}

/** A training image: region `region` of a run as given (variant 0) or its slide variant `variant`. */
interface TrainingEntry {
  region: ImageRegion;
  variant: number;
}

/** Each training region, followed by the slide variants it gets; each is drawn from as an image of its own. */
function trainingEntries(regions: readonly ImageRegion[], scanned: readonly ScannedPair[], variants: ImageVariants | undefined): TrainingEntry[] {
  return regions.flatMap((region) => {
    const { modality, imageChannels } = scanned[region.image]!;
    const copies = variants ? variantCount(variants, modality, imageChannels) : 0;
    return Array.from({ length: 1 + copies }, (_, variant) => ({ region, variant }));
  });
}

const covers = (region: ImageRegion, pair: { width: number; height: number }) =>
  region.x === 0 && region.y === 0 && region.width === pair.width && region.height === pair.height;

/** A region's id: its image's, with where it lies when it is a part of it. */
function regionId(imageId: string, region: ImageRegion, pair: { width: number; height: number }): string {
  return covers(region, pair) ? imageId : `${imageId}@${region.x},${region.y},${region.width}x${region.height}`;
}

/**
 * Steps timed before a time-only budget is turned into a schedule length. They are timed after the
 * first step, which also pays onnxruntime's one-off costs (buffer allocation on the first run) and,
 * counted in, made the schedule end well before the budget did.
 */
const TIMED_STEPS = 3;

/** What one training run of the plan gives back. */
interface RunOutcome {
  /** The run's training configuration (its schedule as planned). */
  config: TrainingConfig;
  steps: number;
  params: Float32Array;
  /** The best validated weights, their step and scores; the last validated scores. */
  bestParams: Float32Array;
  candidateStep: number;
  bestScores: ValidationScores | undefined;
  lastScores: ValidationScores | undefined;
  baseScores: ValidationScores | undefined;
  judged: ValidationImage[];
  baseJudged: ValidationImage[];
  memory: PreparedImageCacheStats;
  executionProvider: ExecutionProvider;
}

/** The seed of a training whose request names none: the same annotations then always split alike. */
export const DEFAULT_TRAINING_SEED = 1;

export async function fineTune(request: FineTuneRequest): Promise<FineTuneResult> {
  const { steps: stepBudget, seconds } = request.budget;
  if (stepBudget === undefined && seconds === undefined) throw new Error("fine-tuning needs a budget: steps, seconds or both");
  if (stepBudget !== undefined && !(Number.isInteger(stepBudget) && stepBudget > 0))
    throw new Error(`budget.steps must be a positive integer, got ${stepBudget}`);
  if (seconds !== undefined && !(seconds > 0)) throw new Error(`budget.seconds must be positive, got ${seconds}`);
  if (request.pairs.length === 0) throw new Error("fine-tuning needs at least one (image, labels) pair");
  const validations = request.validations ?? 4;
  if (!(Number.isInteger(validations) && validations >= 1)) throw new Error(`validations must be a positive integer, got ${validations}`);
  // The time budget counts from here: reading and preparing the pairs, and scoring the base, spend it too.
  const started = performance.now();

  const job = await scanPairs(request, validations, started);
  const outcomes: RunOutcome[] = [];
  for (let r = 0; r < job.plan.runs.length; r++) outcomes.push(await trainRun(job, r));
  const verdict = weigh(job.plan, outcomes, job.seed);
  // The weights kept are trained on on everything; the verdict was drawn before, on the regions they had not seen.
  const onEverything = job.plan.thenOnEverything && verdict.weights !== "base" ? await trainRun(job, job.plan.runs.length, outcomes[0]!.bestParams) : undefined;
  const config = outcomes.at(-1)!.config;
  return finish({ ...job, outcomes, verdict, onEverything, config, baseConfig: { ...config, network: job.baseWeights.network } });
}

/** What the scan of the pairs settles before any training: the base, the recipe, the plan of runs, and how each region is read. */
interface FineTuneJob {
  request: FineTuneRequest;
  started: number;
  seed: number;
  validations: number;
  base: { onnx: Uint8Array; manifest: ModelManifest };
  baseWeights: ReturnType<typeof weightsFromModel>;
  /** The network trained (the base's, or it widened to colour) and its starting weights. */
  network: TrainingConfig["network"];
  startParams: Float32Array;
  widened: boolean;
  reads: ModelReads;
  baseReads: ModelReads;
  recipe: ReturnType<typeof fineTuneRecipe>;
  variants: ImageVariants | undefined;
  budgetBytes: number;
  ids: string[];
  scanned: ScannedPair[];
  measured: number[];
  /** Each image's object diameter for preparing it (its set's median where it has none). */
  diameterOf: number[];
  /** Whole images prepared during the scan, offered to the first run's cache. */
  preparedInScan: Map<number, PreparedImage>;
  plan: RunPlan;
  /** A region as the network (`as`) reads it, a slide variant of it where `variant` is set. */
  regionOf(region: ImageRegion, as: ModelReads, variant?: number): Promise<LabelledImage>;
  /** The judged regions holding objects, as validation reads them. */
  judgedAs(regions: readonly ImageRegion[], as: ModelReads): ValidationImage[];
}

/**
 * One pass over the pairs, one at a time: sizes, objects, diameters and modalities, then the pairs
 * put in their content's order, so that a seed splits and trains alike however they were listed; and, where
 * nothing is held out (every image is trained whole), the first training images prepared while
 * they fit the budget, so a job that fits reads each image once. Then the recipe (from every
 * pair's modality) and the plan of runs (from every image's objects).
 */
async function scanPairs(request: FineTuneRequest, validations: number, started: number): Promise<FineTuneJob> {
  const base = loadBase(request.base);
  const baseWeights = weightsFromModel(base.onnx);
  // One-channel and colour models both train; the manifest says which the network's channels hold.
  const baseReads = networkReads(baseWeights.network.inputChannels);
  if (!manifestReadsAs(base.manifest, baseWeights.network.inputChannels))
    throw new Error(
      `${base.manifest.name}'s manifest (channels ${base.manifest.channels}${base.manifest.input ? `, input ${base.manifest.input}` : ""}) does not describe its network, which reads ${baseWeights.network.inputChannels} channel(s)${baseReads.input ? ` (${baseReads.input})` : ""}`,
    );
  const budgetBytes = request.memoryBudgetBytes ?? DEFAULT_TRAINING_MEMORY_BYTES;
  const ids = request.pairs.map((_, i) => `custom/${String(i).padStart(5, "0")}`);
  // The request's order during the scan; the content's order (pair-order.ts) from its end on.
  let pairs = request.pairs;
  const readPair = async (i: number): Promise<TrainingPair> => {
    const pair = await pairs[i]!();
    if (pair.labels.length !== pair.image.width * pair.image.height)
      throw new InputError(`pair ${i}: labels hold ${pair.labels.length} values for a ${pair.image.width}x${pair.image.height} image`);
    return pair;
  };
  const seed = request.seed ?? DEFAULT_TRAINING_SEED;
  const holdOut = request.holdOut ?? true;

  let scanned: ScannedPair[] = [];
  const fingerprints: number[] = [];
  let preparedInScan = new Map<number, PreparedImage>();
  let scanBytes = 0;
  for (let i = 0; i < ids.length; i++) {
    const read = await readPair(i);
    fingerprints.push(pairFingerprint(read.image, read.labels));
    const pair = asLabelled(ids[i]!, read, baseReads);
    const diameter = medianObjectDiameter(pair.labels);
    scanned.push({
      width: pair.width,
      height: pair.height,
      imageChannels: read.image.channels,
      modality: pair.modality,
      diameter,
      objects: objectsAlong(pair),
    });
    const bytes = preparedImageBytes(pair.width, pair.height, pair.channels);
    if (!holdOut && diameter > 0 && scanBytes + bytes <= budgetBytes) {
      preparedInScan.set(i, await prepareImageInThread(pair, base.manifest.diameter, diameter, request.signal));
      scanBytes += bytes;
    }
  }
  const order = contentOrder(fingerprints);
  pairs = order.map((from) => request.pairs[from]!);
  scanned = order.map((from) => scanned[from]!);
  const preparedInOrder = new Map<number, PreparedImage>();
  order.forEach((from, to) => {
    const prepared = preparedInScan.get(from);
    if (prepared) preparedInOrder.set(to, { ...prepared, id: ids[to]! });
  });
  preparedInScan = preparedInOrder;
  const measured = scanned.map((p) => p.diameter);
  // Chosen from every pair's modality, so known only once all are read.
  const recipe = fineTuneRecipe(
    scanned.map((p) => p.modality),
    baseWeights.network.inputChannels,
  );
  const widened = recipe.inputChannels !== baseWeights.network.inputChannels;
  const { network, params: startParams } = widened ? expandToColour(baseWeights.network, baseWeights.params) : baseWeights;
  const reads = networkReads(network.inputChannels);
  // The scan read the images as the base reads them; a widened network reads them again, in colour.
  if (widened) preparedInScan.clear();
  const variants = recipe.slideVariants > 0 ? slideVariants(recipe.slideVariants, seed) : undefined;
  const plan = planRuns(
    scanned.map((p) => p.objects),
    holdOut,
    MIN_HELD_OUT_OBJECTS,
    seed,
  );
  // An image without objects is prepared at its set's median size (a negative example).
  const diameterOf = preparingDiameters(ids, measured);

  const regionOf = async (region: ImageRegion, as: ModelReads, variant = 0): Promise<LabelledImage> => {
    const read = await readPair(region.image);
    const pair = asLabelled(ids[region.image]!, read, as);
    const made = variant && variants ? labelledVariant(pair, read.image, as, variants, variant) : pair;
    return covers(region, pair) ? made : cropLabelled(made, region, regionId(made.id, region, pair));
  };
  const judgedAs = (regions: readonly ImageRegion[], as: ModelReads): ValidationImage[] =>
    regions
      .filter((region) => objectsIn(scanned[region.image]!.objects, region) > 0)
      .map((region) => ({
        id: regionId(ids[region.image]!, region, scanned[region.image]!),
        diameter: measured[region.image]!,
        load: () => regionOf(region, as),
      }));

  return {
    request,
    started,
    seed,
    validations,
    base,
    baseWeights,
    network,
    startParams,
    widened,
    reads,
    baseReads,
    recipe,
    variants,
    budgetBytes,
    ids,
    scanned,
    measured,
    diameterOf,
    preparedInScan,
    plan,
    regionOf,
    judgedAs,
  };
}

/** The plan's runs in the order they train: its runs, then the run on everything where the verdict keeps the weights. */
const runSequence = (plan: RunPlan) => [...plan.runs, ...(plan.thenOnEverything ? [plan.thenOnEverything] : [])];
const sumOfShares = (runs: readonly { share: number }[]) => runs.reduce((sum, run) => sum + run.share, 0);

/**
 * The run on everything continues weights already fine-tuned: it warms up to a quarter of the
 * peak rate and ends where the judged run's schedule ended (a tenth of it), so it adds the judged
 * regions' objects without moving far from the weights the verdict was drawn on. Not chosen on
 * any figures.
 */
const CONTINUED_PEAK_FRACTION = 0.25;
const CONTINUED_FINAL_FRACTION = 0.4;

/**
 * Run `r` of the plan's sequence: its training regions prepared within the memory budget, the base
 * scored on its judged regions as it is served (one channel where the candidate was widened to
 * colour, so the guard weighs what the user would get against what they have), then the steps,
 * validated on schedule. Each run takes its share of the time left; the first counts from the
 * start, as the scan spent its time. Under a step budget each run of the plan trains its steps,
 * and the run on everything its share of them. `from`: weights to continue (the run on everything).
 */
async function trainRun(job: FineTuneJob, r: number, from?: Float32Array): Promise<RunOutcome> {
  const { request, base, baseWeights, network, startParams, widened, reads, baseReads, recipe, variants, budgetBytes } = job;
  const { ids, scanned, diameterOf, preparedInScan, plan, regionOf, judgedAs, started, seed, validations } = job;
  const { steps: stepBudget, seconds } = request.budget;
  const sequence = runSequence(plan);
  const run = sequence[r]!;
  const runStarted = r === 0 ? started : performance.now();
  const runSeconds = seconds === undefined ? undefined : ((seconds - (runStarted - started) / 1000) * run.share) / sumOfShares(sequence.slice(r));
  const runSteps = stepBudget === undefined ? undefined : Math.max(1, Math.round((stepBudget * run.share) / sequence[0]!.share));
  // Folds that rotate are judged once, at their end: the weights they stand for are the last run's last ones.
  const runValidations = plan.kind === "rotated_regions" ? 1 : validations;
  const judged = judgedAs(run.judged, reads);
  const baseJudged = widened ? judgedAs(run.judged, baseReads) : judged;
  const entries = trainingEntries(run.training, scanned, variants);
  const images = new PreparedImageCache(
    entries.map(({ region, variant }) => `${regionId(ids[region.image]!, region, scanned[region.image]!)}${variant ? `~${variant}` : ""}`),
    entries.map(({ region }) => ({ width: region.width, height: region.height, channels: reads.channels })),
    budgetBytes,
    async (k) => {
      const { region, variant } = entries[k]!;
      return prepareImageInThread(await regionOf(region, reads, variant), base.manifest.diameter, diameterOf[region.image]!, request.signal);
    },
  );
  entries.forEach(({ region, variant }, k) => {
    const prepared = variant ? undefined : preparedInScan.get(region.image);
    if (prepared && covers(region, scanned[region.image]!)) images.offer(k, prepared);
  });
  preparedInScan.clear();

  // With only a time budget, the schedule's length is set once the first steps have been timed.
  const plannedSteps = runSteps ?? 100_000;
  const peak = request.learningRate ?? base.manifest.fineTuneLearningRate ?? recipe.learningRate ?? FINE_TUNE_PEAK_LEARNING_RATE;
  const config = defaultTrainingConfig(plannedSteps, {
    network,
    seed,
    augmentation: recipe.augmentation,
    modelDiameter: base.manifest.diameter,
    cropSize: base.manifest.tileSize,
    batchSize: request.batchSize ?? 4,
    schedule: {
      peak: from ? peak * CONTINUED_PEAK_FRACTION : peak,
      warmupSteps: Math.min(10, Math.ceil(plannedSteps / 10)),
      totalSteps: plannedSteps,
      finalFraction: from ? CONTINUED_FINAL_FRACTION : 0.1,
    },
  });
  const state = freshTrainingState(config, from ?? startParams);
  const trainer = await Trainer.create(state, images, { intraOpNumThreads: request.threads ?? 2, interOpNumThreads: 1 }, request.executionProvider);

  const validationTimes: number[] = [];
  const timed = async (score: () => Promise<ValidationScores>) => {
    const validationStarted = performance.now();
    const scores = await score();
    validationTimes.push((performance.now() - validationStarted) / 1000);
    return scores;
  };
  const validate = judged.length ? (weights: Float32Array) => timed(() => validationAp(config, weights, judged)) : undefined;
  const baseScores = validate ? await timed(() => validationAp({ ...config, network: baseWeights.network }, baseWeights.params, baseJudged)) : undefined;
  // The loop keeps the best validated fine-tuned weights (the candidate); whether they beat the
  // base by more than noise is decided after the runs, on the evidence of both.
  let candidateStep = 0;
  let firstStepSeconds = 0;
  let validationsDone = 0;
  let nextValidation = Math.ceil(plannedSteps / runValidations);
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  const elapsedInRun = () => (performance.now() - runStarted) / 1000;
  /**
   * Sets the schedule's length and the next validation from the timings so far: the steps that fit
   * the time left once the validations still due are paid (at the mean time of those run), the
   * validations spread evenly over the steps left. Planned after the first timed steps, then again
   * at every validation, since a shared machine's speed drifts; the schedule's length changing
   * after the warm-up moves the cosine's rate a little, which costs less than ending early or late.
   */
  const replan = (step: number, elapsed: number) => {
    const validationsLeft = validate ? runValidations - validationsDone : 0;
    // After the last validation the run ends where planned: more steps would go unvalidated.
    if (runSeconds !== undefined && (validationsLeft > 0 || !validate)) {
      const inValidation = sum(validationTimes.slice(1));
      const stepSeconds = (elapsed - inValidation - firstStepSeconds) / Math.max(1, step - 1);
      const validationSeconds = validationTimes.length ? sum(validationTimes) / validationTimes.length : 0;
      const fitting = step + stepsThatFit(runSeconds - elapsed, stepSeconds, validationsLeft * validationSeconds, 0);
      config.schedule.totalSteps = Math.max(step, Math.min(runSteps ?? Infinity, fitting));
      // Stopping at the schedule's end leaves the budget's rest for the validations.
      loopOptions.lastStep = config.schedule.totalSteps;
    }
    const stepsLeft = config.schedule.totalSteps - step;
    nextValidation = validationsLeft > 0 ? step + Math.max(1, Math.ceil(stepsLeft / validationsLeft)) : Infinity;
  };
  const loopOptions: LoopOptions = {
    lastStep: plannedSteps,
    seconds: runSeconds === undefined ? undefined : runSeconds - elapsedInRun(),
    validate,
    validateWhen: (step) => step === nextValidation,
    onEvent: (event) => {
      if (event.kind === "validation") {
        if (event.best) candidateStep = event.step;
        validationsDone++;
        replan(event.step, elapsedInRun());
      }
      if (event.kind !== "step") return;
      const elapsed = elapsedInRun();
      if (event.step === 1) firstStepSeconds = elapsed;
      if (runSeconds !== undefined && event.step === 1 + TIMED_STEPS) replan(event.step, elapsed);
      const fraction = Math.min(1, Math.max(runSteps ? event.step / runSteps : 0, runSeconds ? elapsed / runSeconds : 0));
      // Runs follow one another: the job's progress is the runs done and this one's part of their shares.
      request.onProgress?.({
        step: event.step,
        totalSteps: runSteps ?? Math.round(event.step / Math.max(fraction, 1e-9)),
        loss: event.loss,
        fraction: (sumOfShares(sequence.slice(0, r)) + fraction * run.share) / sumOfShares(sequence),
      });
    },
  };
  const loop = await trainLoop(trainer, loopOptions);
  return {
    config,
    steps: state.step,
    params: state.params,
    bestParams: loop.bestParams,
    candidateStep: validate ? candidateStep : state.step,
    bestScores: loop.bestScores,
    lastScores: loop.lastScores,
    baseScores,
    judged,
    baseJudged,
    memory: images.stats(),
    executionProvider: trainer.executionProvider,
  };
}

interface Finished {
  request: FineTuneRequest;
  base: { onnx: Uint8Array; manifest: ModelManifest };
  baseWeights: ReturnType<typeof weightsFromModel>;
  widened: boolean;
  recipe: ReturnType<typeof fineTuneRecipe>;
  plan: RunPlan;
  outcomes: RunOutcome[];
  verdict: Verdict;
  /** The kept weights trained on everything after the verdict (held_out_regions), where they were. */
  onEverything: RunOutcome | undefined;
  config: TrainingConfig;
  baseConfig: TrainingConfig;
  measured: number[];
  started: number;
  seed: number;
}

/** The guard's evidence and the weights it returns. */
interface Verdict {
  evidence: GainEvidence | undefined;
  weights: ReturnType<typeof returnedWeights>;
}

/**
 * The guard's verdict on the plan's runs. Rotated folds pool their judged regions: the base and
 * each fold's last weights, region by region, every object judged once. Otherwise the one run's
 * best validated weights are weighed.
 */
function weigh(plan: RunPlan, outcomes: readonly RunOutcome[], seed: number): Verdict {
  const rotated = plan.kind === "rotated_regions";
  const judging = rotated ? outcomes.slice(0, -1) : outcomes;
  const pooled = (pick: (o: RunOutcome) => ValidationScores | undefined) => judging.flatMap((o) => pick(o)?.tiles ?? []);
  const baseTiles = pooled((o) => o.baseScores);
  const tunedTiles = pooled((o) => (rotated ? o.lastScores : o.bestScores));
  // Seeded by the request's seed: the same run's scores give the same interval.
  const weighed = baseTiles.length > 0 && baseTiles.length === tunedTiles.length ? gainEvidence(baseTiles, tunedTiles, { seed }) : undefined;
  // Scores on the images trained on show what was learned, never a gain or its absence elsewhere:
  // below the minimum the verdict is "too few to tell", whatever they say.
  const evidence = weighed && plan.kind === "training_images" ? { ...weighed, verdict: "too_few_to_tell" as const } : weighed;
  return { evidence, weights: returnedWeights(evidence, plan.kind) };
}

/**
 * The model the verdict returns, with its figures: the base; the last run's weights (rotated
 * folds, trained on everything); or the judged run's best validated ones, trained on everything
 * afterwards where the plan has that run.
 */
async function finish(f: Finished): Promise<FineTuneResult> {
  const { request, base, baseWeights, widened, recipe, plan, outcomes, verdict, onEverything, config, baseConfig, measured } = f;
  const { evidence, weights } = verdict;
  const rotated = plan.kind === "rotated_regions";
  const judging = rotated ? outcomes.slice(0, -1) : outcomes;
  const returnedRun = outcomes.at(-1)!;
  const validated = evidence !== undefined;
  const keptBase = weights === "base";
  const candidateStep = rotated ? returnedRun.steps : (outcomes[0]?.candidateStep ?? 0);
  const continued = onEverything?.steps ?? 0;
  const chosenStep = keptBase ? 0 : (validated ? candidateStep : returnedRun.steps) + continued;
  const mean = (values: (number | undefined)[]) => {
    const known = values.filter((v): v is number => v !== undefined);
    return known.length ? known.reduce((a, b) => a + b, 0) / known.length : undefined;
  };
  const apBefore = rotated ? evidence?.apBase : outcomes[0]?.baseScores?.ap50.mean;
  const ap75Before = mean(judging.map((o) => o.baseScores?.ap75?.mean));
  const tunedAp = rotated ? evidence?.apFineTuned : outcomes[0]?.bestScores?.ap50.mean;
  const tunedAp75 = mean(judging.map((o) => (rotated ? o.lastScores : o.bestScores)?.ap75?.mean));
  const apAfter = keptBase ? apBefore : tunedAp;
  const ap75After = keptBase ? ap75Before : tunedAp75;
  const apLastStep = rotated ? tunedAp : outcomes[0]?.lastScores?.ap50.mean;
  // The weights the verdict was drawn on; those trained on everything afterwards have seen the judged regions.
  const judgedParams = validated && !rotated ? returnedRun.bestParams : returnedRun.params;
  // Kept, the base comes back as it was given: its own network, bytes and reading (one channel,
  // where the candidate was widened to colour).
  const judged = keptBase
    ? { config: baseConfig, params: baseWeights.params, judged: outcomes[0]!.baseJudged }
    : { config, params: judgedParams, judged: rotated ? [] : outcomes[0]!.judged };
  const returnedParams = onEverything?.params ?? judged.params;
  const steps = returnedRun.steps;
  const judgedRegions = judging.reduce((n, o) => n + o.judged.length, 0);
  const note = fineTuneNote({
    evidence,
    candidateStep,
    steps,
    apLastStep,
    heldOutBy: plan.kind,
    folds: plan.folds,
    missing: plan.missing,
    thenOnEverything: continued,
  });
  const name = request.name ?? `${base.manifest.name}-finetuned`;
  const version = request.version ?? new Date().toISOString();
  const trainedImages = new Set(plan.runs.at(-1)!.training.map((region) => region.image)).size;
  const provenance = {
    source: `fine-tuned from ${base.manifest.name}@${base.manifest.version}${keptBase || !widened ? "" : " (its one-channel first layer spread over three colour planes)"} by this project's trainer, weights of step ${chosenStep - continued} of ${steps}${continued ? `, then ${continued} steps on every region,` : ""} on ${trainedImages} images`,
    license: base.manifest.provenance.license,
    trainedOn: [...(base.manifest.provenance.trainedOn ?? []), `${trainedImages} user images`],
    createdAt: new Date().toISOString(),
  };
  const model = keptBase ? keptBaseModel(base, name, version, provenance) : exportModel(config, returnedParams, name, version, provenance);
  // The base's mask defaults were chosen for its flows; the fine-tuned network's are of the same
  // kind, except where its recipe trained it as another model was (the stained recipe: cpsam-histology's).
  const maskDefaults = keptBase ? base.manifest.maskDefaults : { ...base.manifest.maskDefaults, ...recipe.maskDefaults };
  if (maskDefaults && Object.keys(maskDefaults).length > 0) model.manifest.maskDefaults = maskDefaults;
  // Fine-tuning the result again starts from the same network, so it keeps the base's rate.
  if (base.manifest.fineTuneLearningRate) model.manifest.fineTuneLearningRate = base.manifest.fineTuneLearningRate;
  // The training objects' size becomes the model's start for diameter "auto" only where it
  // segments the judged regions clearly better than the image's own estimate does
  // (keepsLearnedSize): a set whose objects differ in size from image to image is better served by
  // the estimate. Weights trained on everything (rotated folds) have nothing left to check it on;
  // weights trained on everything after the verdict keep the choice made with the judged weights.
  const learnedDiameter = medianOf(measured.filter((d) => d > 0));
  let sizeNote = "";
  if (learnedDiameter !== undefined && judged.judged.length) {
    const maskDefaults = model.manifest.maskDefaults;
    const withSize = await autoDiameterAp(judged.config, judged.params, judged.judged, { trainedObjectDiameter: learnedDiameter, maskDefaults });
    const withEstimate = await autoDiameterAp(judged.config, judged.params, judged.judged, { maskDefaults });
    const keep = keepsLearnedSize(withSize, withEstimate);
    if (keep) model.manifest.trainedObjectDiameter = learnedDiameter;
    // The note's one pair of scores is the base's and the returned weights' above; the two "auto"
    // scores behind this choice would read as a second pair, so they are not repeated in it.
    sizeNote = keep
      ? `. Segmenting without a diameter, the new model starts from its training objects' median diameter, ${learnedDiameter.toFixed(1)} px (it segmented the judged regions better than each image's own size estimate)`
      : ". Segmenting without a diameter, the new model estimates each image's object size itself, as its base does";
  }
  if (learnedDiameter !== undefined && !validated) model.manifest.trainedObjectDiameter = learnedDiameter;
  return {
    ...model,
    steps: steps + continued,
    seconds: (performance.now() - f.started) / 1000,
    memory: (onEverything ?? returnedRun).memory,
    recipe: recipe.name,
    executionProvider: returnedRun.executionProvider,
    learningRate: config.schedule.peak,
    validation: {
      apBefore,
      apAfter,
      apLastStep,
      ap75Before,
      ap75After,
      chosenStep,
      candidateStep,
      thenOnEverything: continued,
      heldOut: judgedRegions,
      heldOutBy: plan.kind,
      folds: plan.folds,
      judgedImages: new Set(plan.runs.flatMap((run) => run.judged.map((region) => region.image))).size,
      onTrainingImage: plan.kind === "training_images",
      unverified: weights === "unverified",
      evidence,
      note: note + sizeNote,
    },
  };
}
