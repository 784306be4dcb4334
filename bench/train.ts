// npm run bench:train [-- --provider cpu|webgpu|cuda] [-- --fine-tune [--condition inverted|plain] [--seconds S] [--lr R] [--base <onnx>] [--data <kromp dir>]]
// Speed: network time per megapixel for candidate widths (the architecture choice) and for the
// shipped cpsam model, next to onnxruntime's own large-MatMul throughput measured in the same run
// as the reference; train-step time per sample.
// With --fine-tune: does fine-tuning on a handful of 512x512 images for a few minutes on this CPU
// improve AP on held-out images of the same kind? The 8 Kromp images of cpsam's validation split
// (the base model never trained on them): 2 crops of 512x512 from each of 4 to fine-tune
// (fineTune holds 2 of the 8 crops out for its guard), the 4 others, whole, scored before and
// after. Two conditions: "inverted" (the same images with inverted contrast, dark nuclei on a
// bright background, which the base model cannot segment: what a customer's fine-tune is for) and
// "plain" (the images as they are, which the base already segments well: fine-tuning must not
// make it worse).
import { existsSync, readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import * as ort from "onnxruntime-node";
import { DEFAULT_ADAMW } from "../gpu-runner/network/adamw.ts";
import type { NetworkConfig } from "../gpu-runner/network/flow-network.ts";
import { buildInferenceModel } from "../gpu-runner/network/inference-model.ts";
import { multiplyAddsPerPixel } from "../gpu-runner/network/multiply-adds.ts";
import { parameterLayout } from "../gpu-runner/network/parameter-layout.ts";
import { buildTrainStepModel, TrainStepNames as N } from "../gpu-runner/network/train-step-model.ts";
import { encodeModel } from "../gpu-runner/onnx/model-builder.ts";
import { floatTensor } from "../gpu-runner/network/graph.ts";
import { initialParameters } from "../gpu-runner/training/initial-parameters.ts";
import { CPSAM_LARGE_NETWORK, CPSAM_NETWORK, defaultTrainingConfig, FINE_TUNE_PEAK_LEARNING_RATE } from "../gpu-runner/training/training-config.ts";
import type { TrainingConfig } from "../gpu-runner/training/training-config.ts";
import type { DecodedImage } from "../common/decode/index.ts";
import { parseManifest } from "../gpu-runner/engine/model.ts";
import { weightsFromModel } from "../gpu-runner/network/weights-from-model.ts";
import { fineTune } from "../gpu-runner/training/fine-tune.ts";
import { readLabelledDirectory } from "../gpu-runner/training/labelled-images.ts";
import type { LabelledImage } from "../gpu-runner/training/labelled-images.ts";
import { validationAp, validationImages } from "../gpu-runner/training/validate.ts";
import { validationIds } from "../gpu-runner/training/validation-split.ts";

const { values } = parseArgs({
  options: {
    threads: { type: "string" },
    size: { type: "string" },
    "fine-tune": { type: "boolean" },
    condition: { type: "string" },
    base: { type: "string" },
    seconds: { type: "string" },
    data: { type: "string" },
    lr: { type: "string" },
    provider: { type: "string" },
  },
});
const threads = Number(values.threads ?? 2);
const side = Number(values.size ?? 1024);
const provider = values.provider ?? "cpu";
if (!["cpu", "webgpu", "cuda"].includes(provider)) throw new Error(`--provider must be cpu, webgpu or cuda, got ${provider}`);
const sessionOptions: ort.InferenceSession.SessionOptions = {
  intraOpNumThreads: threads,
  interOpNumThreads: 1,
  graphOptimizationLevel: "all",
  executionProviders: [provider],
};

// The machine is shared: wall time varies with other work, so CPU time (all threads) is reported
// beside it. The wall-clock figure is the median of the runs.
let lastCpuSeconds = 0;
async function medianSeconds(run: () => Promise<unknown>, repeats: number): Promise<number> {
  await run(); // warm-up: first runs allocate and pick kernels
  const times: number[] = [];
  const cpuBefore = process.cpuUsage();
  for (let i = 0; i < repeats; i++) {
    const t = performance.now();
    await run();
    times.push((performance.now() - t) / 1000);
  }
  const cpu = process.cpuUsage(cpuBefore);
  lastCpuSeconds = (cpu.user + cpu.system) / 1e6 / repeats;
  return times.sort((a, b) => a - b)[times.length >> 1] ?? Number.NaN;
}

async function matMulGflops(): Promise<number> {
  const n = 1024;
  const model = encodeModel({
    name: "matmul",
    inputs: [floatTensor("a", [n, n]), floatTensor("b", [n, n])],
    outputs: [floatTensor("c", [n, n])],
    initializers: [],
    nodes: [{ op: "MatMul", inputs: ["a", "b"], outputs: ["c"] }],
  });
  const session = await ort.InferenceSession.create(model, sessionOptions);
  const a = new ort.Tensor("float32", new Float32Array(n * n).fill(0.5), [n, n]);
  const seconds = await medianSeconds(() => session.run({ a, b: a }), 7);
  return (2 * n ** 3) / seconds / 1e9;
}

async function inferenceSecondsPerMegapixel(model: Uint8Array, channels: number): Promise<number> {
  const session = await ort.InferenceSession.create(model, sessionOptions);
  const input = new ort.Tensor(
    "float32",
    new Float32Array(channels * side * side).map((_, i) => (i % 97) / 97),
    [1, channels, side, side],
  );
  const inputName = session.inputNames[0]!; // the inference model's one input
  const seconds = await medianSeconds(() => session.run({ [inputName]: input }), 5);
  return seconds / ((side * side) / 1e6);
}

async function trainStepSecondsPerSample(config: NetworkConfig, batch: number, crop: number): Promise<number> {
  const session = await ort.InferenceSession.create(buildTrainStepModel(config, DEFAULT_ADAMW), sessionOptions);
  const count = parameterLayout(config).totalSize;
  const vector = (v: Float32Array) => new ort.Tensor("float32", v, [count]);
  const feeds = {
    [N.images]: new ort.Tensor("float32", new Float32Array(batch * config.inputChannels * crop * crop).fill(0.3), [batch, config.inputChannels, crop, crop]),
    [N.targets]: new ort.Tensor("float32", new Float32Array(batch * 3 * crop * crop).fill(0.5), [batch, 3, crop, crop]),
    [N.params]: vector(initialParameters(parameterLayout(config), 1)),
    [N.firstMoment]: vector(new Float32Array(count)),
    [N.secondMoment]: vector(new Float32Array(count)),
    [N.step]: new ort.Tensor("float32", Float32Array.of(1), []),
    [N.learningRate]: new ort.Tensor("float32", Float32Array.of(1e-3), []),
  };
  return (await medianSeconds(() => session.run(feeds), 3)) / batch;
}

type Condition = "inverted" | "plain";

/** Dark nuclei on a bright background: the image mirrored about its maximum. */
function inverted(pair: LabelledImage): LabelledImage {
  let max = -Infinity;
  for (const v of pair.image) if (v > max) max = v;
  const image = pair.image.map((v) => max - v);
  return { ...pair, image };
}

function crop(pair: LabelledImage, x0: number, y0: number, size: number): { image: DecodedImage; labels: Uint32Array } {
  const image = new Float32Array(size * size),
    labels = new Uint32Array(size * size);
  for (let y = 0; y < size; y++) {
    image.set(pair.image.subarray((y0 + y) * pair.width + x0, (y0 + y) * pair.width + x0 + size), y * size);
    labels.set(pair.labels.subarray((y0 + y) * pair.width + x0, (y0 + y) * pair.width + x0 + size), y * size);
  }
  return { image: { width: size, height: size, channels: 1, bitDepth: 32, sampleFormat: "float", data: image }, labels };
}

async function perImageAp(config: TrainingConfig, params: Float32Array, images: LabelledImage[]): Promise<number[]> {
  const scores: number[] = [];
  for (const image of images) scores.push((await validationAp(config, params, validationImages([image]))).ap50.mean);
  return scores;
}

const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;

async function fineTuneDemonstration(): Promise<void> {
  const basePath = values.base ?? "gpu-runner/models/cpsam/cpsam.onnx";
  const seconds = Number(values.seconds ?? 180);
  const krompDir = values.data ?? "/work/shared/data/nuclei/kromp";
  const conditions: Condition[] = values.condition === undefined ? ["inverted", "plain"] : [values.condition as Condition];
  for (const c of conditions) if (c !== "inverted" && c !== "plain") throw new Error(`--condition must be inverted or plain, got ${c}`);
  if (!(seconds > 0)) throw new Error(`--seconds must be positive, got ${values.seconds}`);

  // cpsam's split exactly: ids of both sets, fraction 0.2, seed 1 (its training record lists the same ids).
  const kromp = readLabelledDirectory(krompDir);
  const bbbcIds = readLabelledDirectory(krompDir.replace(/kromp\/?$/, "bbbc039")).map((p) => p.id);
  const held = validationIds([...bbbcIds, ...kromp.map((p) => p.id)], 0.2, 1);
  const unseen = kromp.filter((p) => held.has(p.id)).sort((a, b) => a.id.localeCompare(b.id));
  const tuneSources = unseen.filter((_, i) => i % 2 === 0);
  const scoredSources = unseen.filter((_, i) => i % 2 === 1);
  console.log(`base ${basePath}; fine-tuning budget ${seconds} s per condition, peak LR ${values.lr ?? FINE_TUNE_PEAK_LEARNING_RATE}, ${threads} threads`);
  console.log(`fine-tune on 8 crops of 512x512 (top-left and bottom-right corners) of ${tuneSources.map((p) => p.id).join(", ")}`);
  console.log(
    `score on ${scoredSources.map((p) => p.id).join(", ")} (whole images, each at its true median nucleus diameter; seen by neither the base model nor the fine-tuning)`,
  );

  const manifest = parseManifest(readFileSync(basePath.replace(/\.onnx$/, ".json"), "utf8"));
  const { network, params: baseParams } = weightsFromModel(new Uint8Array(readFileSync(basePath)));
  const scoringConfig = defaultTrainingConfig(1, { network, modelDiameter: manifest.diameter, cropSize: manifest.tileSize });
  const rows: string[] = [];
  for (const condition of conditions) {
    const transform = condition === "inverted" ? inverted : (p: LabelledImage) => p;
    const scored = scoredSources.map(transform);
    const pairs = tuneSources
      .map(transform)
      .flatMap((p) => [crop(p, 0, 0, 512), crop(p, p.width - 512, p.height - 512, 512)])
      .map((pair) => () => pair);
    console.log(`\n${condition}:`);
    const before = await perImageAp(scoringConfig, baseParams, scored);
    let lastReport = 0;
    const result = await fineTune({
      base: basePath,
      pairs,
      budget: { seconds },
      learningRate: values.lr === undefined ? undefined : Number(values.lr),
      threads,
      onProgress: ({ step, loss, fraction }) => {
        if (performance.now() - lastReport < 30_000) return;
        lastReport = performance.now();
        console.log(`  step ${step} loss ${loss.toFixed(4)} (${Math.round(fraction * 100)}% of the time budget)`);
      },
    });
    const after = await perImageAp(scoringConfig, weightsFromModel(result.onnx).params, scored);
    console.log(`  ${result.steps} steps in ${result.seconds.toFixed(0)} s; ${result.validation.note}`);
    console.log(`  image                 AP@0.5 base  fine-tuned`);
    scored.forEach((p, i) => console.log(`  ${p.id.padEnd(22)}${before[i]!.toFixed(3).padStart(11)}${after[i]!.toFixed(3).padStart(12)}`));
    const change = mean(after) - mean(before);
    rows.push(
      `${condition.padEnd(10)}${mean(before).toFixed(3).padStart(6)}${mean(after).toFixed(3).padStart(12)}${`${change >= 0 ? "+" : ""}${change.toFixed(3)}`.padStart(9)}   step ${result.validation.chosenStep} of ${result.steps}`,
    );
  }
  console.log(`\nmean AP@0.5 on the ${scoredSources.length} scored Kromp images`);
  console.log(`condition   base  fine-tuned   change   weights returned`);
  for (const row of rows) console.log(row);
}

if (values["fine-tune"]) {
  await fineTuneDemonstration();
} else {
  console.log(`provider ${provider}, threads ${threads}, input ${side}x${side}`);
  const reference = await matMulGflops();
  console.log(`reference: onnxruntime MatMul 1024^3 at ${reference.toFixed(1)} GFLOP/s`);
  const referenceCpu = (2 * 1024 ** 3) / lastCpuSeconds / 1e9;
  console.log(`           per CPU-second: ${referenceCpu.toFixed(1)} GFLOP`);
  console.log("candidate widths          params   MAC/px   s/Mpx  CPU-s/Mpx  GFLOP/s  per CPU-s vs MatMul");
  const candidates: number[][] = [
    [8, 16, 32, 64],
    [16, 32, 64, 128],
    [24, 48, 96, 192],
    [32, 64, 128, 256],
  ];
  for (const widths of candidates) {
    const config: NetworkConfig = { inputChannels: 1, widths };
    const macs = multiplyAddsPerPixel(config);
    const perMegapixel = await inferenceSecondsPerMegapixel(buildInferenceModel(config, initialParameters(parameterLayout(config), 1)), 1);
    const gflops = (2 * macs * 1e6) / perMegapixel / 1e9;
    const cpuPerMegapixel = lastCpuSeconds / ((side * side) / 1e6);
    const mark = JSON.stringify(widths) === JSON.stringify(CPSAM_NETWORK.widths) ? " <- cpsam" : "";
    console.log(
      `${JSON.stringify(widths).padEnd(22)} ${String(parameterLayout(config).totalSize).padStart(9)} ${String(Math.round(macs)).padStart(8)} ${perMegapixel.toFixed(3).padStart(7)} ${cpuPerMegapixel.toFixed(3).padStart(10)} ${gflops.toFixed(1).padStart(9)} ${((2 * macs) / cpuPerMegapixel / 1e3 / referenceCpu).toFixed(2).padStart(9)}${mark}`,
    );
  }
  const shippedModels = [
    { path: "gpu-runner/models/cpsam/cpsam.onnx", channels: CPSAM_NETWORK.inputChannels, target: " (target < 1)" },
    { path: "gpu-runner/models/cpsam-large/cpsam-large.onnx", channels: CPSAM_LARGE_NETWORK.inputChannels, target: " (target < 2)" },
  ];
  for (const shipped of shippedModels) {
    if (!existsSync(shipped.path)) {
      console.log(`model ${shipped.path} not found; not measured`);
      continue;
    }
    const perMegapixel = await inferenceSecondsPerMegapixel(new Uint8Array(readFileSync(shipped.path)), shipped.channels);
    console.log(`model ${shipped.path}: ${perMegapixel.toFixed(3)} s per megapixel${shipped.target}`);
  }
  const perSample = await trainStepSecondsPerSample(CPSAM_NETWORK, 8, 224);
  console.log(`cpsam train step (batch 8, 224x224 crops): ${perSample.toFixed(3)} s per sample, ${(8 * perSample).toFixed(2)} s per step`);
  const largePerSample = await trainStepSecondsPerSample(CPSAM_LARGE_NETWORK, 8, 224);
  console.log(
    `cpsam-large train step (colour, widths ${CPSAM_LARGE_NETWORK.widths.join(",")}, batch 8, 224x224 crops): ${largePerSample.toFixed(3)} s per sample, ${(8 * largePerSample).toFixed(2)} s per step`,
  );
}
