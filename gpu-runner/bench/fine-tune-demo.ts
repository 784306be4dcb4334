// npm run bench:train -- --fine-tune [--base <onnx>] [--seconds S]
// Does fine-tuning on a handful of 512x512 images for a few minutes on this CPU improve AP on
// held-out images of the same kind? Uses Kromp images from cpsam's validation split (seed 1,
// fraction 0.2, as its training record states), which the base model never trained on: 512x512
// crops of half of them to fine-tune, the other half (whole images) to score before and after.
import { parseArgs } from "node:util";
import type { DecodedImage } from "../engine/decode/index.ts";
import { fineTune } from "../training/fine-tune.ts";
import { readLabelledDirectory } from "../training/labelled-images.ts";
import type { LabelledImage } from "../training/labelled-images.ts";
import { validationAp, validationImages } from "../training/validate.ts";
import { validationIds } from "../training/validation-split.ts";
import { weightsFromModel } from "../network/weights-from-model.ts";
import { defaultTrainingConfig } from "../training/training-config.ts";
import { readFileSync } from "node:fs";
import { parseManifest } from "../engine/model.ts";

const { values } = parseArgs({
  options: { base: { type: "string" }, seconds: { type: "string" }, data: { type: "string" }, "fine-tune": { type: "boolean" }, threads: { type: "string" }, lr: { type: "string" } },
});
const basePath = values.base ?? "gpu-runner/models/cpsam/cpsam.onnx";
const seconds = Number(values.seconds ?? 180);
const krompDir = values.data ?? "/work/shared/data/nuclei/kromp";
const bbbcDir = krompDir.replace(/kromp\/?$/, "bbbc039");

// Recreate the base model's split exactly: ids of both sets, fraction 0.2, seed 1.
const kromp = readLabelledDirectory(krompDir);
const bbbcIds = readLabelledDirectory(bbbcDir).map((p) => p.id);
const held = validationIds([...bbbcIds, ...kromp.map((p) => p.id)], 0.2, 1);
const unseen = kromp.filter((p) => held.has(p.id)).sort((a, b) => a.id.localeCompare(b.id));
const tuneSources = unseen.filter((_, i) => i % 2 === 0);
const scored = unseen.filter((_, i) => i % 2 === 1);

function crop(pair: LabelledImage, x0: number, y0: number, size: number): { image: DecodedImage; labels: Uint32Array } {
  const image = new Float32Array(size * size), labels = new Uint32Array(size * size);
  for (let y = 0; y < size; y++) {
    image.set(pair.image.subarray((y0 + y) * pair.width + x0, (y0 + y) * pair.width + x0 + size), y * size);
    labels.set(pair.labels.subarray((y0 + y) * pair.width + x0, (y0 + y) * pair.width + x0 + size), y * size);
  }
  return { image: { width: size, height: size, channels: 1, bitDepth: 8, sampleFormat: "uint", data: image }, labels };
}

const pairs = tuneSources.flatMap((p) => [crop(p, 0, 0, 512), crop(p, p.width - 512, p.height - 512, 512)]);
console.log(`fine-tune on ${pairs.length} crops of 512x512 from ${tuneSources.map((p) => p.id).join(", ")}`);
console.log(`score on ${scored.map((p) => p.id).join(", ")} (whole images, never seen by the base model nor the fine-tuning)`);

const manifest = parseManifest(readFileSync(basePath.replace(/\.onnx$/, ".json"), "utf8"));
const { network, params: baseParams } = weightsFromModel(new Uint8Array(readFileSync(basePath)));
const scoringConfig = defaultTrainingConfig(1, { network, modelDiameter: manifest.diameter, cropSize: manifest.tileSize });
const scoredImages = validationImages(scored);
const before = await validationAp(scoringConfig, baseParams, scoredImages);
const started = performance.now();
let lastReport = 0;
const result = await fineTune({
  base: basePath,
  pairs,
  budget: { seconds },
  validationFraction: 0,
  learningRate: values.lr === undefined ? undefined : Number(values.lr),
  threads: Number(values.threads ?? 2),
  onProgress: ({ step, loss, fraction }) => {
    if (performance.now() - lastReport > 15_000) {
      lastReport = performance.now();
      console.log(`  step ${step} loss ${loss.toFixed(4)} (${Math.round(fraction * 100)}% of the time budget)`);
    }
  },
});
const after = await validationAp(scoringConfig, weightsFromModel(result.onnx).params, scoredImages);
console.log(`fine-tuned ${result.steps} steps in ${((performance.now() - started) / 1000).toFixed(0)} s`);
console.log(`AP@0.5 on the ${scoredImages.length} scored Kromp images: before ${before.ap50.kromp.toFixed(3)}, after ${after.ap50.kromp.toFixed(3)} (change ${(after.ap50.kromp - before.ap50.kromp >= 0 ? "+" : "")}${(after.ap50.kromp - before.ap50.kromp).toFixed(3)})`);
