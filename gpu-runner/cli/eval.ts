// npm run eval -- --data <dir> [--model <onnx>|reference] [--diameter D|auto|truth|none] [--modality M]
//                 [--limit N] [--provider P] [--held-out | --selection | --report | --trained-on <training-record.json>]
//                 [--rescale 0.5,0.75,1.5,2] [--augment]
//                 [--cellprob-threshold T[,T...]] [--flow-threshold T[,T...]] [--min-size N[,N...]] [--niter N[,N...]]
// <dir> is a dataset (images/ + labels/<stem>.png) or a folder of datasets (each with images/ and
// labels/, as ../shared/data/nuclei). Prints per dataset, and per modality where the dataset lists
// them in modality.csv: AP at IoU 0.5/0.75/0.9 (Cellpose's TP / (TP + FP + FN), mean over the
// images that have labelled objects: AP is undefined on the others), object counts, the
// modalities the engine detected, and mean time per stage.
// Defaults are the service's: diameter "auto" (the engine's estimate) and modality "auto".
// --diameter: "none", no rescaling; "truth", each image's labelled median diameter (Cellpose's
// benchmark convention, and the training record's validation).
// --held-out keeps only the images a training record lists as validation (its image ids);
// --trained-on only those it trained on, to choose settings without looking at the validation images.
// --selection and --report keep one part of a record whose hold-out is split in two
// (training/validation-split.ts): the part that chose steps and settings, and the part that chose
// nothing, whose figures are the ones to report.
// --augment turns on test-time flip averaging (the engine's `augment`).
// Mask flags may list values: the network runs once per image and every combination is scored from
// its outputs (one line per combination and set), to choose mask parameters by measurement.
// --rescale also scores every image resized by each factor (bilinear; labels nearest neighbour), to
// see how the model and the diameter handling cope with objects of other sizes; with it, a table of
// AP@0.5 and of the diameter used against the true median diameter, per set and factor.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { basename, extname, join } from "node:path";
import { parseArgs } from "node:util";
import { averagePrecision } from "../../common/scoring/average-precision.ts";
import { decodeImage } from "../../common/decode/index.ts";
import type { ExecutionProviderChoice } from "../engine/model.ts";
import { chooseModel } from "../engine/model-choice.ts";
import { resizePlanar } from "../engine/resize.ts";
import { segmentImage } from "../engine/segment.ts";
import { MODALITIES } from "../engine/modality.ts";
import type { Modality } from "../engine/modality.ts";
import { listedModalities } from "../training/labelled-images.ts";
import { medianObjectDiameter } from "../engine/object-diameter.ts";
import { atImageResolution, computeMasks, DEFAULT_MASK_PARAMS, type MaskParams } from "../engine/masks/compute-masks.ts";
import { MASK_FLAG_OPTIONS, MASK_FLAGS_USAGE, maskParamGridFromFlags } from "./mask-flags.ts";

const THRESHOLDS = [0.5, 0.75, 0.9];

function datasets(root: string): string[] {
  if (existsSync(join(root, "images")) && existsSync(join(root, "labels"))) return [root];
  const found = readdirSync(root)
    .map((entry) => join(root, entry))
    .filter((dir) => statSync(dir).isDirectory() && existsSync(join(dir, "images")) && existsSync(join(dir, "labels")));
  if (found.length === 0) throw new Error(`${root} holds no dataset (a folder with images/ and labels/)`);
  return found.sort();
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      data: { type: "string" },
      model: { type: "string" },
      diameter: { type: "string" },
      modality: { type: "string", default: "auto" },
      limit: { type: "string" },
      provider: { type: "string", default: "auto" },
      verbose: { type: "boolean", default: false },
      "held-out": { type: "string" },
      selection: { type: "string" },
      report: { type: "string" },
      "trained-on": { type: "string" },
      augment: { type: "boolean", default: false },
      rescale: { type: "string" },
      ...MASK_FLAG_OPTIONS,
    },
  });
  if (!values.data)
    throw new Error(
      `usage: npm run eval -- --data <dir> [--model <onnx>|reference] [--diameter D|auto|truth|none] [--modality auto|${MODALITIES.join("|")}] [--limit N] [--held-out | --selection | --report | --trained-on record.json] [--rescale f1,f2] [--augment] ${MASK_FLAGS_USAGE} (mask flags may list values to sweep)`,
    );
  const diameter = parseDiameter(values.diameter);
  const modality = parseModality(values.modality);
  const maskGrid = maskParamGridFromFlags(values);
  const maskParams = maskGrid[0]!;
  const sweep = maskGrid.length > 1;
  const limit = values.limit === undefined ? Infinity : Number(values.limit);
  const parts = (["held-out", "selection", "report", "trained-on"] as const).filter((flag) => values[flag] !== undefined);
  if (parts.length > 1) throw new Error(`--${parts.join(" and --")} exclude each other`);
  const recordImages = (path: string | undefined, split: "training" | "validation" | "selection" | "report") => {
    if (path === undefined) return undefined;
    const images = JSON.parse(readFileSync(path, "utf8")).images[split];
    if (!Array.isArray(images)) throw new Error(`${path} lists no ${split} images`);
    return new Set<string>(images);
  };
  const selected =
    recordImages(values["held-out"], "validation") ??
    recordImages(values.selection, "selection") ??
    recordImages(values.report, "report") ??
    recordImages(values["trained-on"], "training");
  const factors =
    values.rescale === undefined
      ? [1]
      : [
          1,
          ...values.rescale
            .split(",")
            .map(parseFactor)
            .filter((f) => f !== 1),
        ];
  const model = await chooseModel(values.model, values.provider as ExecutionProviderChoice);
  console.log(
    `model ${model.manifest.name}@${model.manifest.version} (diameter ${model.manifest.diameter}) on ${model.executionProvider}, diameter ${diameter ?? "none (no rescaling)"}, modality ${modality}${values.augment ? ", flip averaging" : ""}`,
  );
  const table: string[] = [];
  const verbose = values.verbose;

  for (const dir of datasets(values.data)) {
    const set = basename(dir);
    const listed = listedModalities(dir);
    // The image ids of training records: "<set>/<stem>", or "<set>/<modality>/<stem>" in a set listing modalities.
    const groupOf = (file: string) => (listed ? `${set}/${listed.get(basename(file, extname(file))) ?? "unlisted"}` : set);
    const files = readdirSync(join(dir, "images"))
      .filter((f) => !f.startsWith(".") && (selected === undefined || selected.has(`${groupOf(f)}/${basename(f, extname(f))}`)))
      .sort();
    const groups = new Map<string, string[]>();
    for (const file of files) groups.set(groupOf(file), [...(groups.get(groupOf(file)) ?? []), file]);
    for (const [group, members] of [...groups].sort()) for (const factor of factors) await evaluateSet(dir, group, members.slice(0, limit), factor);
  }
  if (values.rescale !== undefined) {
    console.log(`\nset       factor  images  AP@0.5  true diameter (median)  diameter used (median)`);
    for (const row of table) console.log(row);
  }

  async function evaluateSet(dir: string, group: string, files: string[], factor: number): Promise<void> {
    const apSum = THRESHOLDS.map(() => 0);
    const sweepSums = maskGrid.map(() => THRESHOLDS.map(() => 0));
    let trueObjects = 0,
      predicted = 0,
      images = 0,
      withoutObjects = 0,
      megapixels = 0;
    const trueDiameters: number[] = [],
      usedDiameters: number[] = [];
    const stageSum: Record<string, number> = { decode: 0 };
    const detected: Record<string, number> = {};
    const name = factor === 1 ? group : `${group} x${factor}`;
    for (const [n, file] of files.entries()) {
      progress(`${name}: image ${n + 1}/${files.length}`, n + 1);
      const labelPath = join(dir, "labels", `${basename(file, extname(file))}.png`);
      if (!existsSync(labelPath)) {
        console.warn(`  ${file}: no label image, skipped`);
        continue;
      }
      const t = performance.now();
      let image = decodeImage(new Uint8Array(readFileSync(join(dir, "images", file))));
      const decodedTruth = decodeImage(new Uint8Array(readFileSync(labelPath)), { channels: [0] });
      stageSum.decode! += performance.now() - t;
      if (decodedTruth.width !== image.width || decodedTruth.height !== image.height)
        throw new Error(`${labelPath} is ${decodedTruth.width}x${decodedTruth.height}, image is ${image.width}x${image.height}`);
      let truth: Uint32Array = Uint32Array.from(decodedTruth.data);
      if (factor !== 1) {
        const width = Math.max(1, Math.round(image.width * factor)),
          height = Math.max(1, Math.round(image.height * factor));
        truth = resizeLabelsNearest(truth, image.width, image.height, width, height);
        image = { ...image, width, height, data: resizePlanar(image.data, image.channels, image.width, image.height, width, height) };
      }
      const trueDiameter = medianObjectDiameter(truth);
      if (trueDiameter === 0) {
        withoutObjects++;
        continue;
      }
      const at = diameter === "truth" ? trueDiameter : diameter;
      const result = await segmentImage(
        image,
        model,
        { ...maskParams, modality, augment: values.augment, ...(at === undefined ? {} : { diameter: at }) },
        { keepNetworkOutputs: sweep },
      );
      if (sweep) {
        const modelDefaults = result.modality ? model.manifest.maskDefaults?.[result.modality.modality] : undefined;
        scoreSweep(
          // The outputs are at the image's size, made by a pass at the model's diameter / the one used.
          maskGrid.map((combination) =>
            atImageResolution({ ...DEFAULT_MASK_PARAMS, ...modelDefaults, ...combination }, model.manifest.diameter / result.diameter),
          ),
          result.networkOutputs!,
          image.width,
          image.height,
          truth,
          sweepSums,
        );
      }
      if (result.modality) detected[result.modality.modality] = (detected[result.modality.modality] ?? 0) + 1;
      for (const [stage, ms] of Object.entries(result.timings)) stageSum[stage] = (stageSum[stage] ?? 0) + ms;
      trueDiameters.push(trueDiameter);
      usedDiameters.push(result.diameter);
      const score = averagePrecision(truth, result.labels, THRESHOLDS);
      if (verbose)
        console.log(
          `  ${file} x${factor}: AP@0.5 ${score.ap[0]!.toFixed(3)}, true diameter ${trueDiameter.toFixed(1)}, used ${result.diameter.toFixed(1)}${result.diameterEstimate ? ` (image ${result.diameterEstimate.fromImage?.toFixed(1)}, masks ${result.diameterEstimate.fromMasks?.toFixed(1)}, passes ${result.diameterEstimate.passes})` : ""}`,
        );
      score.ap.forEach((ap, i) => (apSum[i]! += ap));
      trueObjects += score.tp[0]! + score.fn[0]!;
      predicted += result.rois.length;
      images++;
      megapixels += (image.width * image.height) / 1e6;
    }
    progress("", 0);
    if (images === 0) {
      console.log(`${name}: no images with labels`);
      return;
    }
    const ap = apSum.map((s) => (s / images).toFixed(3));
    const stages = Object.entries(stageSum)
      .map(([stage, ms]) => `${stage} ${(ms / images).toFixed(0)}`)
      .join(", ");
    const skipped = withoutObjects > 0 ? ` (${withoutObjects} without labelled objects skipped)` : "";
    console.log(`${name}: ${images} images${skipped}, AP@0.5 ${ap[0]}  AP@0.75 ${ap[1]}  AP@0.9 ${ap[2]}; objects true ${trueObjects}, predicted ${predicted}`);
    const modalities = Object.entries(detected)
      .map(([m, count]) => `${m} ${count}`)
      .join(", ");
    if (modalities) console.log(`  modality ${modality === "auto" ? "detected" : "given"}: ${modalities}`);
    console.log(
      `  mean ms per image: ${stages}; network ${(stageSum.network! / megapixels).toFixed(0)} ms per megapixel of input image (after any rescaling by diameter)`,
    );
    if (sweep) {
      for (const [i, combination] of maskGrid.entries()) {
        console.log(
          `  ${describeMaskParams(combination).padEnd(48)} AP@0.5 ${(sweepSums[i]![0]! / images).toFixed(3)}  AP@0.75 ${(sweepSums[i]![1]! / images).toFixed(3)}  AP@0.9 ${(sweepSums[i]![2]! / images).toFixed(3)}`,
        );
      }
    }
    table.push(
      `${group.padEnd(9)} ${String(factor).padStart(6)}  ${String(images).padStart(6)}  ${ap[0]}   ${median(trueDiameters).toFixed(1).padStart(20)}  ${median(usedDiameters).toFixed(1).padStart(22)}`,
    );
  }
}

/** Scores every mask-parameter combination of a sweep on one image's network outputs. */
function scoreSweep(maskGrid: MaskParams[], outputs: Float32Array, width: number, height: number, truth: Uint32Array, sums: number[][]): void {
  const plane = width * height;
  for (const [i, combination] of maskGrid.entries()) {
    // computeMasks scales the flows in place: each combination starts from a fresh copy.
    const flows = outputs.slice(0, 2 * plane);
    const { labels } = computeMasks(flows, outputs.subarray(2 * plane), width, height, combination);
    averagePrecision(truth, labels, THRESHOLDS).ap.forEach((ap, t) => (sums[i]![t]! += ap));
  }
}

function describeMaskParams(params: Partial<MaskParams>): string {
  const set = Object.entries(params).map(([name, value]) => `${name} ${value}`);
  return set.length ? set.join(", ") : "engine defaults";
}

/** A progress line that rewrites itself on a terminal; elsewhere a line every 25 images. */
function progress(line: string, done = 0): void {
  if (process.stderr.isTTY) process.stderr.write(`\r${line.padEnd(60)}${line ? "" : "\r"}`);
  else if (done > 0 && done % 25 === 0) console.error(line);
}

function parseModality(value: string | undefined): Modality | "auto" {
  if (value === undefined || value === "auto") return "auto";
  const modality = MODALITIES.find((m) => m === value);
  if (!modality) throw new Error(`--modality must be auto or one of ${MODALITIES.join(", ")}, got ${value}`);
  return modality;
}

function parseDiameter(value: string | undefined): number | "auto" | "truth" | undefined {
  if (value === undefined) return "auto";
  if (value === "none") return undefined;
  if (value === "auto" || value === "truth") return value;
  const diameter = Number(value);
  if (!(diameter > 0 && Number.isFinite(diameter))) throw new Error(`--diameter must be a positive number, "auto", "truth" or "none", got ${value}`);
  return diameter;
}

function parseFactor(value: string): number {
  const factor = Number(value);
  if (!(factor > 0 && factor <= 8)) throw new Error(`--rescale factors must be in (0, 8], got ${value}`);
  return factor;
}

/** Nearest-neighbour resize of a label image, pixel centres aligned (as resizePlanar's bilinear). */
function resizeLabelsNearest(labels: Uint32Array, width: number, height: number, newWidth: number, newHeight: number): Uint32Array {
  const out = new Uint32Array(newWidth * newHeight);
  for (let y = 0; y < newHeight; y++) {
    const sy = Math.min(height - 1, Math.floor(((y + 0.5) * height) / newHeight));
    for (let x = 0; x < newWidth; x++) out[y * newWidth + x] = labels[sy * width + Math.min(width - 1, Math.floor(((x + 0.5) * width) / newWidth))]!;
  }
  return out;
}

function median(values: number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

main().catch((error: unknown) => {
  console.error(`eval: ${(error as Error).message}`);
  process.exit(1);
});
