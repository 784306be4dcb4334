// npm run bench:finetune-weights: what a fine-tuning's weights can add on a user's unseen images,
// with neither the service nor the guard in the way. Fine-tunes a public model on the first
// --train images of a modality (the split of bench:finetune, finetune-split.ts), all of them
// trained on (nothing held out, so nothing is chosen) for --steps steps, then scores on the next
// --test images the base, the fine-tuned weights and mixes of the two: weights (1 - a)·base +
// a·fine-tuned for each --alphas a (WiSE-FT, Wortsman et al. 2022, "Robust fine-tuning of zero-shot
// models": the mix often generalises beyond both ends). Each is scored as served, diameter "auto"
// with the base's mask defaults, and as fine-tuning's guard scores its held-out pairs (each image's
// true diameter, Cellpose's mask defaults), so the two columns separate what the weights add from
// what the size estimate does with them.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { decodeImage } from "../common/decode/index.ts";
import { parseManifest } from "../gpu-runner/engine/model.ts";
import { weightsFromModel } from "../gpu-runner/network/weights-from-model.ts";
import { fineTune } from "../gpu-runner/training/fine-tune.ts";
import { labelsFromImage, pairImageWithLabels } from "../gpu-runner/training/labelled-images.ts";
import { medianObjectDiameter } from "../gpu-runner/engine/object-diameter.ts";
import { defaultTrainingConfig } from "../gpu-runner/training/training-config.ts";
import { autoDiameterAp, validationAp } from "../gpu-runner/training/validate.ts";
import type { ValidationImage } from "../gpu-runner/training/validate.ts";
import { fineTuneSplit } from "./finetune-split.ts";

const { values } = parseArgs({
  options: {
    data: { type: "string", default: "../shared/data/nuclei/dsb2018-train" },
    base: { type: "string", default: "cpsam" },
    "held-out": { type: "string", default: "gpu-runner/models/cpsam/training-record.json" },
    set: { type: "string", default: "histology" },
    train: { type: "string", default: "8" },
    test: { type: "string", default: "13" },
    rotate: { type: "string", default: "0" },
    steps: { type: "string", default: "900" },
    lr: { type: "string" },
    alphas: { type: "string", default: "0,0.5,1" },
    help: { type: "boolean", default: false },
  },
});

if (values.help) {
  console.log(`npm run bench:finetune-weights -- [--data <dsb2018-train dir>] [--base cpsam|cpsam-large] [--held-out <training-record.json>|none] [--set histology] [--train N] [--test N] [--rotate N] [--steps N] [--lr peak] [--alphas 0,0.5,1]
  --steps   fine-tuning steps, all on the --train images (default 900, what the runner's 600 s gave cpsam on the idle 2-core CPU)
  --lr      peak learning rate (default: the base manifest's fineTuneLearningRate, else the trainer's)
  --alphas  mixes scored: 0 is the base, 1 the fine-tuned weights`);
  process.exit(0);
}

const basePath = `gpu-runner/models/${values.base}/${values.base}.onnx`;
const manifest = parseManifest(readFileSync(basePath.replace(/\.onnx$/, ".json"), "utf8"), `${values.base}.json`);
const { trainNames, testNames } = fineTuneSplit({
  data: values.data,
  heldOutRecord: values["held-out"],
  modality: values.set,
  train: Number(values.train),
  test: Number(values.test),
  rotate: Number(values.rotate),
});
const alphas = values.alphas.split(",").map(Number);
if (alphas.some((a) => !(a >= 0 && a <= 1))) throw new Error(`--alphas must lie in [0, 1], got ${values.alphas}`);
const read = (folder: "images" | "labels", name: string) => new Uint8Array(readFileSync(join(values.data, folder, `${name}.png`)));
console.log(`${values.base}, ${values.set}: fine-tuning on ${trainNames.length} images for ${values.steps} steps, scoring ${testNames.length} others`);

const started = performance.now();
const result = await fineTune({
  base: basePath,
  pairs: trainNames.map((name) => () => ({ image: decodeImage(read("images", name)), labels: labelsFromImage(decodeImage(read("labels", name))) })),
  budget: { steps: Number(values.steps) },
  holdOut: false,
  learningRate: values.lr === undefined ? undefined : Number(values.lr),
});
console.log(`${result.steps} steps in ${((performance.now() - started) / 1000).toFixed(0)} s at a peak learning rate of ${result.learningRate}`);

const { network, params: baseParams } = weightsFromModel(new Uint8Array(readFileSync(basePath)));
const tuned = weightsFromModel(result.onnx).params;
const config = defaultTrainingConfig(1, { network, modelDiameter: manifest.diameter, cropSize: manifest.tileSize });
const unseen: ValidationImage[] = testNames.map((name) => {
  const load = () => pairImageWithLabels(name, read("images", name), read("labels", name), manifest)[0]!;
  return { id: name, diameter: medianObjectDiameter(load().labels), load };
});
console.log("mix a   AP@0.5 diameter auto   AP@0.5 true diameter");
for (const alpha of alphas) {
  const mixed = new Float32Array(baseParams.length);
  for (let i = 0; i < mixed.length; i++) mixed[i] = (1 - alpha) * baseParams[i]! + alpha * tuned[i]!;
  const auto = await autoDiameterAp(config, mixed, unseen, { maskDefaults: manifest.maskDefaults });
  const truth = await validationAp(config, mixed, unseen);
  console.log(`${alpha.toFixed(2).padStart(5)}   ${auto.toFixed(3).padStart(20)}   ${truth.ap50.mean.toFixed(3).padStart(20)}`);
}
