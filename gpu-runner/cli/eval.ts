// npm run eval -- --data <dir> [--model <onnx>|reference] [--diameter D] [--limit N] [--provider P]
// <dir> is a dataset (images/ + labels/<stem>.png) or a folder of datasets (each with images/ and
// labels/, as ../shared/data/nuclei). Prints per dataset: AP at IoU 0.5/0.75/0.9 (Cellpose's
// TP / (TP + FP + FN), mean over images), object counts, and mean time per stage.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { basename, extname, join } from "node:path";
import { parseArgs } from "node:util";
import { averagePrecision } from "../engine/average-precision.ts";
import { decodeImage } from "../engine/decode/index.ts";
import type { ExecutionProviderChoice } from "../engine/model.ts";
import { chooseModel } from "../engine/model-choice.ts";
import { segmentImage } from "../engine/segment.ts";

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
      limit: { type: "string" },
      provider: { type: "string", default: "auto" },
    },
  });
  if (!values.data) throw new Error("usage: npm run eval -- --data <dir> [--model <onnx>|reference] [--diameter D] [--limit N]");
  const diameter = values.diameter === undefined ? undefined : Number(values.diameter);
  const limit = values.limit === undefined ? Infinity : Number(values.limit);
  const model = await chooseModel(values.model, values.provider as ExecutionProviderChoice);
  console.log(`model ${model.manifest.name}@${model.manifest.version} on ${model.executionProvider}${diameter ? `, diameter ${diameter}` : ""}`);

  for (const dir of datasets(values.data)) {
    const files = readdirSync(join(dir, "images")).filter((f) => !f.startsWith(".")).sort().slice(0, limit);
    const apSum = THRESHOLDS.map(() => 0);
    let trueObjects = 0, predicted = 0, images = 0, megapixels = 0;
    const stageSum: Record<string, number> = { decode: 0 };
    for (const file of files) {
      const labelPath = join(dir, "labels", `${basename(file, extname(file))}.png`);
      if (!existsSync(labelPath)) { console.warn(`  ${file}: no label image, skipped`); continue; }
      let t = performance.now();
      const image = decodeImage(new Uint8Array(readFileSync(join(dir, "images", file))));
      const truth = decodeImage(new Uint8Array(readFileSync(labelPath)), { channels: [0] });
      stageSum.decode! += performance.now() - t;
      if (truth.width !== image.width || truth.height !== image.height) throw new Error(`${labelPath} is ${truth.width}x${truth.height}, image is ${image.width}x${image.height}`);
      const result = await segmentImage(image, model, diameter === undefined ? {} : { diameter });
      for (const [stage, ms] of Object.entries(result.timings)) stageSum[stage] = (stageSum[stage] ?? 0) + ms;
      const score = averagePrecision(Uint32Array.from(truth.data), result.labels, THRESHOLDS);
      score.ap.forEach((ap, i) => (apSum[i]! += ap));
      trueObjects += score.tp[0]! + score.fn[0]!;
      predicted += result.rois.length;
      images++;
      megapixels += (image.width * image.height) / 1e6;
      t = performance.now();
    }
    if (images === 0) { console.log(`${basename(dir)}: no images with labels`); continue; }
    const ap = apSum.map((s) => (s / images).toFixed(3));
    const stages = Object.entries(stageSum).map(([stage, ms]) => `${stage} ${(ms / images).toFixed(0)}`).join(", ");
    console.log(`${basename(dir)}: ${images} images, AP@0.5 ${ap[0]}  AP@0.75 ${ap[1]}  AP@0.9 ${ap[2]}; objects true ${trueObjects}, predicted ${predicted}`);
    console.log(`  mean ms per image: ${stages}; network ${(stageSum.network! / megapixels).toFixed(0)} ms per megapixel of input image (after any rescaling by diameter)`);
  }
}

main().catch((error: unknown) => {
  console.error(`eval: ${(error as Error).message}`);
  process.exit(1);
});
