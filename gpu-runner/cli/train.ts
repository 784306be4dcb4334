// npm run train -- --data <dir>... [--from <onnx>] [--input channel|colour] [--steps N] [--out <dir>]
// Trains the flow network from scratch (or fine-tunes --from) on image/label folders, with a
// progress line, periodic validation AP on a fixed seeded hold-out, checkpoints, and automatic
// resume when <out>/checkpoint.bin exists. --input colour trains a colour model (three planes made
// for the modality, engine/model-input.ts); with --from a one-channel model it starts from that
// model's weights spread over the three planes (network/colour-weights.ts).
import type { ExecutionProviderChoice } from "../engine/model.ts";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { expandToColour } from "../network/colour-weights.ts";
import { widenNetwork } from "../network/widen-network.ts";
import { weightsFromModel } from "../network/weights-from-model.ts";
import { loadCheckpoint, saveCheckpoint } from "../training/checkpoint.ts";
import type { TrainingState } from "../training/checkpoint.ts";
import { describeHardware } from "../training/hardware.ts";
import { type ImageVariants, readLabelledDirectory, setOfImage, variantSource } from "../training/labelled-images.ts";
import { SLIDE_VARIANTS, slideVariants } from "../training/stain-augment.ts";
import { exportModel, writeModel } from "../training/model-export.ts";
import { networkReads } from "../training/network-input.ts";
import { prepareImages } from "../training/prepare-image.ts";
import { preparedInMemory } from "../training/prepared-image-cache.ts";
import { trainLoop } from "../training/train-loop.ts";
import type { TrainingEvent } from "../training/train-loop.ts";
import { CELLPOSE_AUGMENTATION, MICROSCOPE_AUGMENTATION } from "../training/augment.ts";
import { CPSAM_NETWORK, defaultTrainingConfig, FINE_TUNE_PEAK_LEARNING_RATE } from "../training/training-config.ts";
import { IMAGE_SAMPLINGS } from "../training/training-config.ts";
import type { ImageSampling } from "../training/training-config.ts";
import { SeededRandom } from "../training/random.ts";
import { freshTrainingState, Trainer } from "../training/trainer.ts";
import { validationAp, validationImages, validationSample } from "../training/validate.ts";
import { type HoldOutUnits, selectionAndReport, validationIds } from "../training/validation-split.ts";

const USAGE =
  "usage: npm run train -- --data <dir> [--data <dir>...] [--from <onnx>] [--input channel|colour] [--steps N] [--seconds S] [--out <dir>] [--name cpsam] [--seed N] [--validation-fraction F] [--validate-every N] [--validation-per-set N] [--lr peak] [--checkpoint-every N] [--threads N] [--provider cpu|webgpu|cuda|auto] [--widths 16,32,64,128 (with --from: widen it)] [--zoom-range R] [--sampling per-set|per-image|sqrt] [--augmentation cellpose|microscope] [--groups set[/modality],...] [--hold-out-by set=regex[:fraction]]... [--slide-variants N]";

function fail(message: string): never {
  console.error(`train: ${message}\n${USAGE}`);
  process.exit(2);
}

function positiveInteger(value: string | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) fail(`--${name} must be a non-negative integer, got "${value}"`);
  return n;
}

const { values } = parseArgs({
  options: {
    data: { type: "string", multiple: true },
    from: { type: "string" },
    input: { type: "string" },
    steps: { type: "string" },
    seconds: { type: "string" },
    out: { type: "string" },
    name: { type: "string" },
    seed: { type: "string" },
    "validation-fraction": { type: "string" },
    "validate-every": { type: "string" },
    "checkpoint-every": { type: "string" },
    "validation-per-set": { type: "string" },
    lr: { type: "string" },
    "zoom-range": { type: "string" },
    sampling: { type: "string" },
    augmentation: { type: "string" },
    threads: { type: "string" },
    provider: { type: "string" },
    widths: { type: "string" },
    groups: { type: "string" },
    "hold-out-by": { type: "string", multiple: true },
    "slide-variants": { type: "string" },
    help: { type: "boolean" },
  },
  allowPositionals: false,
});
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}
const dataDirs = values.data ?? fail("--data is required");
const steps = positiveInteger(values.steps, "steps", 3000);
const seconds = values.seconds === undefined ? undefined : Number(values.seconds);
if (seconds !== undefined && !(seconds > 0)) fail(`--seconds must be a positive number, got "${values.seconds}"`);
const outDir = values.out ?? "training-output";
const name = values.name ?? "cpsam";
const seed = positiveInteger(values.seed, "seed", 1);
const validationFraction = values["validation-fraction"] === undefined ? 0.2 : Number(values["validation-fraction"]);
const validateEvery = positiveInteger(values["validate-every"], "validate-every", 250);
const checkpointEvery = positiveInteger(values["checkpoint-every"], "checkpoint-every", 50);
const threads = positiveInteger(values.threads, "threads", 2);
// Where the train steps run; the periodic checks stay on the CPU. A GPU host speeds a step about
// tenfold (the model card's figures), and a run may move between hosts at any checkpoint.
const provider = (values.provider ?? "cpu") as ExecutionProviderChoice;
if (!["cpu", "webgpu", "cuda", "auto"].includes(provider)) fail(`--provider must be cpu, webgpu, cuda or auto, got "${provider}"`);
const learningRate = values.lr === undefined ? undefined : Number(values.lr);
if (learningRate !== undefined && !(learningRate > 0)) fail(`--lr must be a positive number, got "${values.lr}"`);
// Random zoom drawn from [1 - R/2, 1 + R/2] (Cellpose: 0.5); wider shows the network more small and large objects.
const zoomRange = values["zoom-range"] === undefined ? undefined : Number(values["zoom-range"]);
if (zoomRange !== undefined && !(zoomRange >= 0 && zoomRange < 2)) fail(`--zoom-range must be at least 0 and below 2, got "${values["zoom-range"]}"`);
const sampling = values.sampling === undefined ? undefined : imageSampling(values.sampling);
// "microscope" adds gamma and noise to Cellpose's transforms (augment.ts).
const baseAugmentation =
  values.augmentation === undefined || values.augmentation === "cellpose"
    ? CELLPOSE_AUGMENTATION
    : values.augmentation === "microscope"
      ? MICROSCOPE_AUGMENTATION
      : fail(`--augmentation must be cellpose or microscope, got "${values.augmentation}"`);
const augmentation = {
  ...(zoomRange === undefined && baseAugmentation === CELLPOSE_AUGMENTATION
    ? {}
    : { augmentation: { ...baseAugmentation, ...(zoomRange === undefined ? {} : { zoomRange }) } }),
  ...(sampling === undefined ? {} : { sampling }),
};
const widths = values.widths === undefined ? undefined : values.widths.split(",").map((w) => positiveInteger(w, "widths", 0));
if (widths !== undefined && (widths.length < 2 || widths.some((w) => w === 0)))
  fail(`--widths must list two or more positive channel counts, got "${values.widths}"`);
// Noise on widened copies' kernels, as a fraction of each layer's weight spread (Net2Net's symmetry breaking).
const WIDENING_NOISE = 0.01;
// --hold-out-by tnbc=^tnbc-\d+[:0.5]: that set is held out by the unit the pattern matches in an
// image's name (a slide), never crop by crop, with its own fraction where given.
const holdOutUnits: HoldOutUnits[] = (values["hold-out-by"] ?? []).map((rule) => {
  const match = /^([^=]+)=(.+?)(?::([0-9.]+))?$/.exec(rule) ?? fail(`--hold-out-by must be set=regex[:fraction], got "${rule}"`);
  return { set: match[1]!, pattern: new RegExp(match[2]!), ...(match[3] === undefined ? {} : { fraction: Number(match[3]) }) };
});
// --slide-variants N: every stained-histology image also trains as N copies with other stain
// amounts, focus and JPEG compression (training/stain-augment.ts); held-out images get none.
const slideVariantCount = positiveInteger(values["slide-variants"], "slide-variants", 0);
const validationPerSet = positiveInteger(values["validation-per-set"], "validation-per-set", 6);
// What the network reads: "channel" (one channel made for the image's modality) or "colour" (three
// planes made for it, engine/README.md "Colour models"). Absent: the --from model's or the
// checkpoint's own, else one channel.
const INPUT_CHANNELS = { channel: 1, colour: 3 } as const;
const inputChannels =
  values.input === undefined
    ? undefined
    : values.input === "channel" || values.input === "colour"
      ? INPUT_CHANNELS[values.input]
      : fail(`--input must be channel or colour, got "${values.input}"`);
mkdirSync(outDir, { recursive: true });
const checkpointPath = join(outDir, "checkpoint.bin");

// State: resumed, fine-tuned from a model, or fresh.
let state: TrainingState;
if (existsSync(checkpointPath)) {
  state = loadCheckpoint(checkpointPath);
  console.log(`resuming ${checkpointPath} at step ${state.step} (its stored config applies)`);
  if (inputChannels !== undefined && inputChannels !== state.config.network.inputChannels)
    fail(`the checkpoint in ${outDir} trains a network of ${state.config.network.inputChannels} input channel(s); --input ${values.input} does not match it`);
  if (steps !== state.config.schedule.totalSteps && values.steps !== undefined) {
    state.config.schedule.totalSteps = steps;
    console.log(`schedule length set to ${steps} steps`);
  }
} else if (values.from) {
  let { network, params } = weightsFromModel(new Uint8Array(readFileSync(values.from)));
  const expandedToColour = inputChannels !== undefined && inputChannels !== network.inputChannels;
  if (expandedToColour) {
    if (inputChannels !== 3) fail(`${values.from} reads ${network.inputChannels} channels; only a one-channel model can become another kind (--input colour)`);
    ({ network, params } = expandToColour(network, params));
  }
  // --widths with --from: a wider network that starts computing what the --from model does (Net2Net).
  const widened = widths !== undefined && widths.join(",") !== network.widths.join(",");
  if (widened) {
    const random = new SeededRandom(seed);
    ({ network, params } = widenNetwork(network, params, widths, { random: () => random.next(), noise: WIDENING_NOISE }));
  }
  const fineTuneDefaults = defaultTrainingConfig(steps, { network, seed, ...augmentation });
  // Fine-tuning starts lower than training from scratch, to keep what the base model learnt.
  fineTuneDefaults.schedule.peak = learningRate ?? FINE_TUNE_PEAK_LEARNING_RATE;
  state = freshTrainingState(fineTuneDefaults, params);
  state.history.startedFrom = values.from;
  if (expandedToColour) state.history.startedFromOneChannel = true;
  if (widened) state.history.widenedTo = widths;
  console.log(
    `fine-tuning from ${values.from}${expandedToColour ? ", its one channel's first-layer weights spread over three colour planes" : ""}${widened ? `, widened to ${widths.join(",")} channels` : ""}`,
  );
} else {
  const network = { ...CPSAM_NETWORK, ...(inputChannels !== undefined && { inputChannels }), ...(widths && { widths }) };
  const config = defaultTrainingConfig(steps, { seed, ...augmentation, network });
  if (learningRate !== undefined) config.schedule.peak = learningRate;
  state = freshTrainingState(config);
}
const { config } = state;

// Data, read as the network reads it, and the fixed hold-out.
const reads = networkReads(config.network.inputChannels);
const variants: ImageVariants | undefined = slideVariantCount > 0 ? slideVariants(slideVariantCount, seed) : undefined;
const allPairs = dataDirs.flatMap((dir) => {
  if (!existsSync(join(dir, "images")) || !existsSync(join(dir, "labels"))) fail(`${dir} has no images/ and labels/ folders`);
  return readLabelledDirectory(dir, reads, variants);
});
// The split is drawn over the images themselves; a variant goes with its image, and held-out images are scored as they are.
const pairs = allPairs.filter((p) => variantSource(p.id) === p.id);
const held = validationIds(
  pairs.map((p) => p.id),
  validationFraction,
  seed,
  holdOutUnits,
);
// --groups narrows training and validation to some groups (a specialist, e.g. dsb2018-train/histology)
// after the split is drawn over every image, so each group keeps the same held-out images.
const groups = values.groups?.split(",");
const unknownGroup = groups?.find((group) => !pairs.some((p) => setOfImage(p.id) === group));
if (unknownGroup !== undefined) fail(`--groups: no images in group "${unknownGroup}"`);
const inGroups = (id: string) => groups === undefined || groups.includes(setOfImage(id));
const trainPairs = allPairs.filter((p) => !held.has(variantSource(p.id)) && inGroups(p.id));
const validationPairs = pairs.filter((p) => held.has(p.id) && inGroups(p.id));
// Periodic checks choose the written weights, so they read only the selection part of the hold-out;
// the report part is scored at the end and chooses nothing.
const { selection, report: reported } = selectionAndReport(
  validationPairs.map((p) => p.id),
  seed,
  holdOutUnits,
);
console.log(
  `data: ${pairs.length} labelled images${variants ? ` (and ${allPairs.length - pairs.length} slide variants)` : ""}, ${trainPairs.length} for training, ${validationPairs.length} held out (seed ${seed}: ${selection.size} to select with, ${reported.size} to report on), read for a ${reads.input ? "colour" : "one-channel"} network`,
);

const preparing = performance.now();
const prepared = prepareImages(trainPairs, config.modelDiameter);
console.log(`prepared ${prepared.length} training images in ${((performance.now() - preparing) / 1000).toFixed(1)} s`);

function writeRecord(final: boolean): void {
  const record = {
    name,
    final,
    data: dataDirs,
    ...(groups === undefined ? {} : { groups }),
    images: {
      training: trainPairs.map((p) => p.id),
      validation: validationPairs.map((p) => p.id),
      selection: [...selection],
      report: [...reported],
    },
    validationSplit: {
      fraction: validationFraction,
      seed,
      ...(holdOutUnits.length > 0 && { units: holdOutUnits.map((u) => ({ ...u, pattern: u.pattern.source })) }),
    },
    ...(variants && { slideVariants: { count: variants.count, settings: SLIDE_VARIANTS } }),
    config,
    stepsCompleted: state.step,
    wallSeconds: (state.history as { wallSeconds?: number }).wallSeconds ?? 0,
    hardware: describeHardware(threads, trainer.executionProvider),
    history: state.history,
  };
  writeFileSync(join(outDir, "training-record.json"), `${JSON.stringify(record, null, 1)}\n`);
}

function provenance() {
  return {
    source: state.history.startedFrom
      ? `fine-tuned from ${state.history.startedFrom}${state.history.startedFromOneChannel ? " (its one-channel first layer spread over three colour planes)" : ""}${state.history.widenedTo ? ` (widened to ${String(state.history.widenedTo)} channels, Net2Net)` : ""} by this project's trainer (gpu-runner/training), ${state.step} steps`
      : `trained from scratch by this project's trainer (gpu-runner/training), ${state.step} steps`,
    license: dataDirs.some((dir) => /(^|\/)tnbc\/?$/.test(dir))
      ? "weights: project licence; training data CC0 and CC BY 4.0 (TNBC: Naylor et al. 2018, IEEE TMI)"
      : "weights: project licence; training data CC0",
    trainedOn: dataDirs.map((dir) => dir.replace(/\/+$/, "").split("/").slice(-2).join("/")),
    createdAt: new Date().toISOString(),
    notes: reads.input
      ? "Cellpose-style flow network (small U-Net) reading three planes made for the image's modality (gpu-runner/engine/modality.ts): the channel mean repeated for fluorescence, the inverted mean repeated for brightfield, R, G and B each inverted for stained histology"
      : "Cellpose-style flow network (small U-Net) reading one channel made for the image's modality (gpu-runner/engine/modality.ts): the channel mean of fluorescence, the inverted mean of brightfield and stained histology",
  };
}

const isTty = process.stdout.isTTY;
function report(event: TrainingEvent): void {
  if (event.kind === "step") {
    countStepOn(trainer.executionProvider);
    const fraction = event.step / event.totalSteps;
    const bar = "#".repeat(Math.round(fraction * 30)).padEnd(30, ".");
    const line = `[${bar}] step ${event.step}/${event.totalSteps} loss ${event.loss.toFixed(4)} lr ${event.learningRate.toExponential(2)} ${(event.seconds / Math.max(1, event.step - startStep)).toFixed(2)} s/step`;
    if (isTty) process.stdout.write(`\r${line}`);
    else if (event.step % 10 === 0) console.log(line);
  } else if (event.kind === "validation") {
    const scores = Object.entries(event.scores.ap50)
      .map(([set, ap]) => `${set} ${ap.toFixed(3)}`)
      .join(", ");
    console.log(`${isTty ? "\n" : ""}validation at step ${event.step}: AP@0.5 ${scores}${event.best ? " (best so far, model written)" : ""}`);
    if (event.best) writeModel(outDir, exportModel(config, event.params, name, `step-${event.step}`, provenance()));
  } else {
    writeRecord(false);
  }
}

/** Steps per execution provider over the whole run, kept in the checkpoint's history (runs before this count began were all on the CPU). */
function countStepOn(executionProvider: string): void {
  const counts = (state.history.stepsByProvider ??= { cpu: state.step - 1 }) as Record<string, number>;
  counts[executionProvider] = (counts[executionProvider] ?? 0) + 1;
}

const startStep = state.step;
const trainer = await Trainer.create(state, preparedInMemory(prepared), { intraOpNumThreads: threads, interOpNumThreads: 1 }, provider);
console.log(`train steps on ${trainer.executionProvider}${trainer.providersSkipped.length ? ` (${trainer.providersSkipped.join("; ")})` : ""}`);
const heldOut = validationImages(validationPairs);
const selectionImages = heldOut.filter(({ id }) => selection.has(id));
const reportImages = heldOut.filter(({ id }) => reported.has(id));
// Periodic checks use a few selection images per set; the best weights are scored on both parts at the end.
const periodicSample = validationSample(selectionImages, validationPerSet);
const validate = validateEvery > 0 && heldOut.length > 0 ? (params: Float32Array) => validationAp(config, params, periodicSample) : undefined;
const result = await trainLoop(trainer, {
  lastStep: config.schedule.totalSteps,
  seconds,
  validateEvery,
  validate,
  checkpointEvery,
  checkpoint: (s) => saveCheckpoint(checkpointPath, s),
  onEvent: report,
});
if (!validate) writeModel(outDir, exportModel(config, result.bestParams, name, `step-${state.step}`, provenance()));
const finished = state.step >= config.schedule.totalSteps;
if (finished && heldOut.length > 0) {
  const best = weightsFromModel(new Uint8Array(readFileSync(join(outDir, `${name}.onnx`)))).params;
  const scores = await validationAp(config, best, heldOut);
  state.history.finalValidation = { images: heldOut.length, ap50: scores.ap50 };
  console.log(`final validation of the written model on all ${heldOut.length} held-out images: AP@0.5 ${JSON.stringify(scores.ap50)}`);
  for (const [part, images] of [
    ["selection", selectionImages],
    ["report", reportImages],
  ] as const) {
    if (images.length === 0) continue;
    const partScores = await validationAp(config, best, images);
    state.history[`${part}Validation`] = { images: images.length, ap50: partScores.ap50 };
    console.log(`  on its ${images.length} ${part} images: AP@0.5 ${JSON.stringify(partScores.ap50)}`);
  }
}
writeRecord(finished);
console.log(`${isTty ? "\n" : ""}done at step ${state.step}; model in ${outDir}/${name}.onnx`);

function imageSampling(value: string): ImageSampling {
  const sampling = IMAGE_SAMPLINGS.find((s) => s === value);
  return sampling ?? fail(`--sampling must be one of ${IMAGE_SAMPLINGS.join(", ")}, got "${value}"`);
}
