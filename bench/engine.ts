// npm run bench:engine [-- --memory | --masks | --fresh | --model <name|onnx>]
// Prints the engine's speed figures on this machine against the issue's targets:
//  1. mask reconstruction for a 1024x1024 image with ~400 cells (ideal flows), target < 0.4 s, on
//     one thread and on the worker pool (--masks: this figure only);
//  2. everything but the network (decode, normalise, tile + blend, masks, ROIs + measurements)
//     for a 1024x1024 16-bit TIFF, target < 1 s without masks;
//  3. the network's time per megapixel through the engine (cpsam when its weights exist, else the
//     reference network), beside one onnxruntime call on the whole input and training-size tiles;
//  4. a real Kromp image end to end, when ../shared is present;
//  5. a 1024x1024 image to ROIs in a fresh process, target < 3 s (--fresh: this figure only);
//  6. --memory: peak RSS of segmenting an 8192x8192 16-bit image (child process; cpsam when its
//     weights exist, else the reference network), target < 2 GB.
// Stage shares are printed next to each figure; memcpy of the same bytes is the in-run reference.
import { spawnSync } from "node:child_process";
import * as ort from "onnxruntime-node";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { decodeImage } from "../common/decode/index.ts";
import { FLOW_SCALE, flowsFromLabels } from "../gpu-runner/engine/flow-targets.ts";
import { runNetwork, tileLayout } from "../gpu-runner/engine/inference.ts";
import { computeMasks, DEFAULT_MASK_PARAMS } from "../gpu-runner/engine/masks/compute-masks.ts";
import { chunksRunByWorkers, defaultThreadCount, startMaskThreads } from "../gpu-runner/engine/masks/mask-threads.ts";
import { loadModelFromBytes, type LoadedModel } from "../gpu-runner/engine/model.ts";
import { chooseModel, DEFAULT_MODEL_PATH } from "../gpu-runner/engine/model-choice.ts";
import { normalizeImage } from "../gpu-runner/engine/normalize.ts";
import { buildReferenceModel } from "../gpu-runner/engine/reference-model.ts";
import { confluency, measureRois } from "../common/geometry/roi-measure.ts";
import { segmentImage } from "../gpu-runner/engine/segment.ts";
import { DataType, encodeModel } from "../gpu-runner/onnx/model-builder.ts";
import { discField, type LabelImage } from "../test/fixtures/labels.ts";
import { renderNuclei } from "../test/fixtures/image.ts";
import { encodeTiff } from "../test/fixtures/tiff-writer.ts";

const ms = (t: number) => `${t.toFixed(0)} ms`;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/** A single-strip, uncompressed, 16-bit grayscale TIFF (enough for benchmark inputs), by the fixture writer. */
function tiff16(data: Uint16Array, width: number, height: number): Uint8Array {
  return encodeTiff([{ width, height, samplesPerPixel: 1, kind: "uint16", values: data }]);
}

function sceneTiff(scene: LabelImage): Uint8Array {
  return tiff16(Uint16Array.from(renderNuclei(scene).data), scene.width, scene.height);
}

/** A near-free network (1x1 convolution to 3 channels) so tiling and blending can be timed alone. */
async function passThroughModel(tileSize: number): Promise<LoadedModel> {
  const onnx = encodeModel({
    name: "pass-through",
    inputs: [{ name: "image", type: DataType.FLOAT, shape: ["N", 1, "H", "W"] }],
    outputs: [{ name: "output", type: DataType.FLOAT, shape: ["N", 3, "H", "W"] }],
    initializers: [{ name: "w", dims: [3, 1, 1, 1], data: Float32Array.from([1, 1, 1]) }],
    nodes: [{ op: "Conv", inputs: ["image", "w"], outputs: ["output"] }],
  });
  const { manifest } = buildReferenceModel({ tileSize });
  return loadModelFromBytes(onnx, { ...manifest, name: "pass-through" }, { executionProvider: "cpu", log: () => {} });
}

async function speed(): Promise<void> {
  console.log(`engine benchmark on ${process.arch}, node ${process.version}`);
  const scene = discField(1024, 1024, 400, 12, 22, 7);
  if (args.includes("--fresh")) return freshProcess(sceneTiff(scene), await chooseModel(existsSync(DEFAULT_MODEL_PATH) ? undefined : "reference"));
  let cells = 0;
  for (const v of scene.labels) cells = Math.max(cells, v);
  const plane = 1024 * 1024;

  // Reference for this machine's speed: copying 1024x1024x3 float32 once.
  const big = new Float32Array(3 * plane).fill(1);
  const copies: number[] = [];
  for (let r = 0; r < 5; r++) {
    const t = performance.now();
    big.slice();
    copies.push(performance.now() - t);
  }
  const memcpy = median(copies);
  console.log(`reference: copy of 12 MB of float32 ${memcpy.toFixed(2)} ms`);

  // 1. Mask reconstruction from ideal network outputs.
  const unit = flowsFromLabels(scene.labels, 1024, 1024);
  const cellprob = Float32Array.from(scene.labels, (v) => (v ? 4 : -4));
  let foreground = 0;
  for (const v of scene.labels) if (v) foreground++;
  // One thread and the default pool, interleaved so both see the same background load; the pool
  // is started first, as a long-running runner has it. CPU time (all threads) beside wall time.
  await startMaskThreads();
  const threadCounts = [1, defaultThreadCount()];
  const runs = new Map(threadCounts.map((threads) => [threads, [] as { total: number; cpu: number; stages: Record<string, number>; count: number }[]]));
  const workerChunksBefore = chunksRunByWorkers();
  for (let r = 0; r < 5; r++) {
    for (const threads of threadCounts) {
      const flows = unit.map((v) => v * FLOW_SCALE);
      const cpu = process.cpuUsage();
      const t = performance.now();
      const result = computeMasks(flows, cellprob, 1024, 1024, { ...DEFAULT_MASK_PARAMS, threads });
      const total = performance.now() - t;
      const used = process.cpuUsage(cpu);
      runs.get(threads)!.push({ total, cpu: (used.user + used.system) / 1000, stages: result.timings, count: result.count });
    }
  }
  console.log(
    `\n1. mask reconstruction, 1024x1024, ${cells} cells, ${((100 * foreground) / plane).toFixed(0)}% foreground, niter ${DEFAULT_MASK_PARAMS.niter} (median of 5):`,
  );
  for (const threads of threadCounts) {
    const best = runs.get(threads)!.sort((a, b) => a.total - b.total)[2]!;
    console.log(
      `   ${threads} thread${threads > 1 ? "s" : ""}: ${ms(best.total)} (target 400 ms, ${(best.total / 400).toFixed(2)}x target; ${(best.total / memcpy).toFixed(0)}x the 12 MB copy; CPU ${ms(best.cpu)}); ${best.count} masks found`,
    );
    console.log(
      `     stages: ${Object.entries(best.stages)
        .map(([k, v]) => `${k} ${ms(v)} (${((100 * v) / best.total).toFixed(0)}%)`)
        .join(", ")}`,
    );
  }
  console.log(`   chunks run by worker threads: ${chunksRunByWorkers() - workerChunksBefore}`);
  if (args.includes("--masks")) return;

  // 2. Everything but the network on a 1024x1024 16-bit TIFF.
  const bytes = sceneTiff(scene);
  const passThrough = await passThroughModel(256);
  const timings: Record<string, number[]> = { decode: [], normalize: [], "tile+blend": [], masks: [], "rois+measurements": [] };
  for (let r = 0; r < 3; r++) {
    let t = performance.now();
    const image = decodeImage(bytes);
    timings.decode!.push(performance.now() - t);
    t = performance.now();
    normalizeImage(image, undefined, image.data);
    timings.normalize!.push(performance.now() - t);
    t = performance.now();
    await runNetwork(image.data, 1, 1024, 1024, passThrough);
    timings["tile+blend"]!.push(performance.now() - t);
    const flows = unit.map((v) => v * FLOW_SCALE);
    t = performance.now();
    const { labels, count } = computeMasks(flows, cellprob, 1024, 1024, DEFAULT_MASK_PARAMS);
    timings.masks!.push(performance.now() - t);
    t = performance.now();
    measureRois(labels, 1024, 1024, count);
    confluency(labels);
    timings["rois+measurements"]!.push(performance.now() - t);
  }
  const medians = Object.fromEntries(Object.entries(timings).map(([k, v]) => [k, median(v)]));
  const withoutMasks = medians.decode! + medians.normalize! + medians["tile+blend"]! + medians["rois+measurements"]!;
  const all = withoutMasks + medians.masks!;
  console.log(`\n2. everything but the network, 1024x1024 16-bit TIFF (${cells} cells):`);
  console.log(`   decode+normalise+tile+ROIs+measurements ${ms(withoutMasks)} (target 1000 ms); with mask reconstruction ${ms(all)}`);
  console.log(
    `   shares of ${ms(all)}: ${Object.entries(medians)
      .map(([k, v]) => `${k} ${ms(v)} (${((100 * v) / all).toFixed(0)}%)`)
      .join(", ")}`,
  );

  // 3. The network per megapixel through the engine (runNetwork: tiles, copies, blending), beside
  // two references run in the same process: one onnxruntime call on the whole 1024x1024 input (the
  // floor) and the network on training-size tiles (how the engine ran it before large tiles).
  const shipped = existsSync(DEFAULT_MODEL_PATH);
  const model = shipped ? await chooseModel(undefined) : await chooseModel("reference");
  const image = decodeImage(bytes);
  normalizeImage(image, undefined, image.data);
  const channelsIn = new Float32Array(model.manifest.channels * plane);
  channelsIn.set(image.data);
  const trainingTiles: LoadedModel = { ...model, anyInputSize: false };
  const wholeInput = new ort.Tensor("float32", channelsIn, [1, model.manifest.channels, 1024, 1024]);
  const network = { engine: [] as number[], whole: [] as number[], trainingTiles: [] as number[] };
  for (let r = 0; r < 3; r++) {
    let t = performance.now();
    await runNetwork(channelsIn, model.manifest.channels, 1024, 1024, model);
    network.engine.push(performance.now() - t);
    if (model.anyInputSize) {
      t = performance.now();
      await model.session.run({ [model.inputName]: wholeInput });
      network.whole.push(performance.now() - t);
    }
    t = performance.now();
    await runNetwork(channelsIn, model.manifest.channels, 1024, 1024, trainingTiles);
    network.trainingTiles.push(performance.now() - t);
  }
  const { rows, columns } = tileLayout(1024, 1024, model);
  const engineMs = median(network.engine);
  console.log(`\n3. network: ${model.manifest.name}@${model.manifest.version} on ${model.executionProvider}, 1024x1024 (median of 3):`);
  console.log(
    `   engine: ${ms(engineMs)} per megapixel (${rows.starts.length * columns.starts.length} tile${rows.starts.length * columns.starts.length > 1 ? "s" : ""} of ${columns.tile}x${rows.tile}; target 500 ms)`,
  );
  if (network.whole.length)
    console.log(
      `   reference, one call on the whole input: ${ms(median(network.whole))} per megapixel; engine ${(engineMs / median(network.whole)).toFixed(2)}x it (target <= 1.32x: 0.5 s against 0.38 s per megapixel on the idle 2-core dev machine)`,
    );
  console.log(
    `   training-size tiles (${model.manifest.tileSize}, the engine before large tiles): ${ms(median(network.trainingTiles))} per megapixel${network.whole.length ? `, ${(median(network.trainingTiles) / median(network.whole)).toFixed(2)}x the one call` : ""}`,
  );
  if (!shipped) console.log(`   ${DEFAULT_MODEL_PATH} does not exist yet: this is the hand-set reference network, not cpsam`);
  // --model <name|onnx>: another model's network time per megapixel, beside the one above, in the same run.
  const otherModel = args.includes("--model") ? args[args.indexOf("--model") + 1] : undefined;
  if (otherModel !== undefined) {
    const other = await chooseModel(otherModel);
    const input = new Float32Array(other.manifest.channels * plane);
    for (let c = 0; c < other.manifest.channels; c++) input.set(image.data, c * plane);
    const times: number[] = [];
    for (let r = 0; r < 3; r++) {
      const t = performance.now();
      await runNetwork(input, other.manifest.channels, 1024, 1024, other);
      times.push(performance.now() - t);
    }
    console.log(
      `   --model ${other.manifest.name}@${other.manifest.version} (${other.manifest.channels} channel${other.manifest.channels > 1 ? "s" : ""}): ${ms(median(times))} per megapixel, ${(median(times) / engineMs).toFixed(2)}x ${model.manifest.name} (target <= 2000 ms on the 2-core CPU)`,
    );
  }

  // 4. A real image end to end, when the shared data is present.
  const kromp = fileURLToPath(new URL("../../shared/data/nuclei/kromp/images/", import.meta.url));
  if (existsSync(kromp)) {
    const file = join(kromp, "Ganglioneuroblastoma_0.tif");
    const t = performance.now();
    const real = decodeImage(new Uint8Array(readFileSync(file)));
    const decode = performance.now() - t;
    const result = await segmentImage(real, model);
    const total = decode + Object.values(result.timings).reduce((a, b) => a + b, 0);
    console.log(`\n4. real image ${real.width}x${real.height}x${real.channels} (kromp Ganglioneuroblastoma_0.tif), ${result.rois.length} cells, ${ms(total)}:`);
    console.log(
      `   decode ${ms(decode)} (${((100 * decode) / total).toFixed(0)}%), ${Object.entries(result.timings)
        .map(([k, v]) => `${k} ${ms(v)} (${((100 * v) / total).toFixed(0)}%)`)
        .join(", ")}`,
    );
  }

  await freshProcess(bytes, model);
}

/**
 * 5. The 1024x1024 TIFF to ROIs in a fresh process at the service's defaults: `npm run segment`'s
 * script (module load, model load, decode, diameter "auto", network, masks, ROIs, its three
 * files), timed from spawn to exit; beside the same segmentation in this warm process.
 */
async function freshProcess(bytes: Uint8Array, model: LoadedModel): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "bench-fresh-"));
  const file = join(dir, "cells.tif");
  writeFileSync(file, bytes);
  const script = fileURLToPath(new URL("../gpu-runner/cli/segment.ts", import.meta.url));
  const fresh: { wall: number; cpu: number | undefined; output: string }[] = [];
  const warm: { wall: number; cpu: number }[] = [];
  for (let r = 0; r < 3; r++) {
    const childCpu = childrenCpuMs();
    let t = performance.now();
    const child = spawnSync(process.execPath, [script, file, "--out", dir, ...(existsSync(DEFAULT_MODEL_PATH) ? [] : ["--model", "reference"])], {
      encoding: "utf8",
    });
    if (child.status !== 0) throw new Error(`segment failed: ${child.stderr}`);
    const wall = performance.now() - t;
    const after = childrenCpuMs();
    fresh.push({ wall, cpu: after !== undefined && childCpu !== undefined ? after - childCpu : undefined, output: child.stdout });
    const cpu = process.cpuUsage();
    t = performance.now();
    await segmentImage(decodeImage(bytes), model, { diameter: "auto" });
    const used = process.cpuUsage(cpu);
    warm.push({ wall: performance.now() - t, cpu: (used.user + used.system) / 1000 });
  }
  rmSync(dir, { recursive: true, force: true });
  const best = fresh.sort((a, b) => a.wall - b.wall)[1]!;
  const warmRun = warm.sort((a, b) => a.wall - b.wall)[1]!;
  const cpu = (value: number | undefined) => (value === undefined ? "" : `; CPU ${ms(value)}`);
  console.log(
    `\n5. 1024x1024 TIFF to ROIs in a fresh process (npm run segment's script, diameter auto; median of 3): ${ms(best.wall)} (target 3000 ms, ${(best.wall / 3000).toFixed(2)}x target${cpu(best.cpu)})`,
  );
  console.log(
    `   the same segmentation in this warm process: ${ms(warmRun.wall)}${cpu(warmRun.cpu)}; the fresh process costs ${ms(best.wall - warmRun.wall)} more`,
  );
  console.log(`   its own timings: ${best.output.split("\n").find((line) => line.startsWith("model "))}`);
}

/** CPU time (ms, user + system) of this process's finished children, from /proc on Linux; undefined elsewhere. */
function childrenCpuMs(): number | undefined {
  try {
    // Fields after the command name: cutime and cstime are the 14th and 15th, in clock ticks (100 Hz).
    const fields = readFileSync("/proc/self/stat", "utf8").split(") ")[1]!.split(" ");
    return ((Number(fields[13]) + Number(fields[14])) * 1000) / 100;
  } catch {
    return undefined;
  }
}

async function memory(): Promise<void> {
  const size = 8192;
  console.log(`generating a ${size}x${size} 16-bit image...`);
  const data = new Uint16Array(size * size);
  // Nuclei on a grid with jitter: ~20 px discs every 40 px, like a confluent culture.
  for (let cy = 20; cy < size; cy += 40) {
    for (let cx = 20; cx < size; cx += 40) {
      const r = 8 + ((cx * 7 + cy * 13) % 5);
      for (let y = cy - r; y <= cy + r; y++)
        for (let x = cx - r; x <= cx + r; x++) {
          if ((x - cx) ** 2 + (y - cy) ** 2 <= r * r) data[y * size + x] = 2000 + (40 * (r * r - (x - cx) ** 2 - (y - cy) ** 2)) / r;
        }
    }
  }
  for (let i = 0; i < data.length; i++) if (data[i] === 0) data[i] = 200;
  const dir = mkdtempSync(join(tmpdir(), "bench-"));
  const file = join(dir, "big.tif");
  writeFileSync(file, tiff16(data, size, size));
  console.log(`segmenting ${file} in a child process (${existsSync(DEFAULT_MODEL_PATH) ? "cpsam" : "reference network"}, cpu)...`);
  const child = spawnSync(process.execPath, [fileURLToPath(import.meta.url), "--memory-child", file], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  });
  rmSync(dir, { recursive: true, force: true });
  process.stdout.write(child.stdout);
  if (child.status !== 0) throw new Error(`child failed with status ${child.status}`);
}

async function memoryChild(file: string): Promise<void> {
  const t = performance.now();
  // The shipped model when its weights exist (its activations are what bound the network's memory).
  const model = await chooseModel(existsSync(DEFAULT_MODEL_PATH) ? undefined : "reference", "cpu", 20);
  const image = decodeImage(new Uint8Array(readFileSync(file)));
  const result = await segmentImage(image, model);
  const peak = process.resourceUsage().maxRSS / 1024; // kB -> MB
  console.log(`8192x8192: ${result.rois.length} cells in ${((performance.now() - t) / 1000) | 0} s; peak RSS ${peak.toFixed(0)} MB (target < 2048 MB)`);
  console.log(
    `stages: ${Object.entries(result.timings)
      .map(([k, v]) => `${k} ${(v / 1000).toFixed(1)} s`)
      .join(", ")}`,
  );
}

const args = process.argv.slice(2);
const task = args[0] === "--memory-child" ? memoryChild(args[1]!) : args.includes("--memory") ? memory() : speed();
task.catch((error: unknown) => {
  console.error(`bench:engine: ${(error as Error).stack}`);
  process.exit(1);
});
