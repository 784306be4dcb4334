// npm run bench:train [-- --fine-tune]
// Speed: network time per megapixel for candidate widths (the architecture choice) and for the
// shipped cpsam model, next to onnxruntime's own large-MatMul throughput measured in the same run
// as the reference; train-step time per sample. With --fine-tune: the fine-tuning demonstration
// (see fine-tune-demo.ts).
import { existsSync, readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import * as ort from "onnxruntime-node";
import { DEFAULT_ADAMW } from "../network/adamw.ts";
import type { NetworkConfig } from "../network/flow-network.ts";
import { buildInferenceModel } from "../network/inference-model.ts";
import { multiplyAddsPerPixel } from "../network/multiply-adds.ts";
import { parameterLayout } from "../network/parameter-layout.ts";
import { buildTrainStepModel, TrainStepNames as N } from "../network/train-step-model.ts";
import { encodeModel } from "../onnx/model-builder.ts";
import { floatTensor } from "../network/graph.ts";
import { initialParameters } from "../training/initial-parameters.ts";
import { CPSAM_NETWORK } from "../training/training-config.ts";

// --base, --seconds, --data and --lr belong to the fine-tuning demonstration (fine-tune-demo.ts).
const { values } = parseArgs({
  options: { threads: { type: "string" }, size: { type: "string" }, "fine-tune": { type: "boolean" }, base: { type: "string" }, seconds: { type: "string" }, data: { type: "string" }, lr: { type: "string" } },
});
const threads = Number(values.threads ?? 2);
const side = Number(values.size ?? 1024);
const sessionOptions: ort.InferenceSession.SessionOptions = { intraOpNumThreads: threads, interOpNumThreads: 1, graphOptimizationLevel: "all" };

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
  return times.sort((a, b) => a - b)[times.length >> 1];
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
  const input = new ort.Tensor("float32", new Float32Array(channels * side * side).map((_, i) => (i % 97) / 97), [1, channels, side, side]);
  const seconds = await medianSeconds(() => session.run({ [session.inputNames[0]]: input }), 5);
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

if (values["fine-tune"]) {
  await import("./fine-tune-demo.ts");
} else {
  console.log(`threads ${threads}, input ${side}x${side}`);
  const reference = await matMulGflops();
  console.log(`reference: onnxruntime MatMul 1024^3 at ${reference.toFixed(1)} GFLOP/s`);
  const referenceCpu = (2 * 1024 ** 3) / lastCpuSeconds / 1e9;
  console.log(`           per CPU-second: ${referenceCpu.toFixed(1)} GFLOP`);
  console.log("candidate widths          params   MAC/px   s/Mpx  CPU-s/Mpx  GFLOP/s  per CPU-s vs MatMul");
  const candidates: number[][] = [[8, 16, 32, 64], [16, 32, 64, 128], [24, 48, 96, 192], [32, 64, 128, 256]];
  for (const widths of candidates) {
    const config: NetworkConfig = { inputChannels: 1, widths };
    const macs = multiplyAddsPerPixel(config);
    const perMegapixel = await inferenceSecondsPerMegapixel(buildInferenceModel(config, initialParameters(parameterLayout(config), 1)), 1);
    const gflops = (2 * macs * 1e6) / perMegapixel / 1e9;
    const cpuPerMegapixel = lastCpuSeconds / ((side * side) / 1e6);
    const mark = JSON.stringify(widths) === JSON.stringify(CPSAM_NETWORK.widths) ? " <- cpsam" : "";
    console.log(`${JSON.stringify(widths).padEnd(22)} ${String(parameterLayout(config).totalSize).padStart(9)} ${String(Math.round(macs)).padStart(8)} ${perMegapixel.toFixed(3).padStart(7)} ${cpuPerMegapixel.toFixed(3).padStart(10)} ${gflops.toFixed(1).padStart(9)} ${((2 * macs) / cpuPerMegapixel / 1e3 / referenceCpu).toFixed(2).padStart(9)}${mark}`);
  }
  const shipped = "gpu-runner/models/cpsam/cpsam.onnx";
  if (existsSync(shipped)) {
    console.log(`shipped ${shipped}: ${(await inferenceSecondsPerMegapixel(new Uint8Array(readFileSync(shipped)), CPSAM_NETWORK.inputChannels)).toFixed(3)} s per megapixel (target < 1)`);
  } else {
    console.log(`shipped model ${shipped} not found; only the candidates above were measured`);
  }
  const perSample = await trainStepSecondsPerSample(CPSAM_NETWORK, 8, 224);
  console.log(`cpsam train step (batch 8, 224x224 crops): ${perSample.toFixed(3)} s per sample, ${(8 * perSample).toFixed(2)} s per step`);
}
