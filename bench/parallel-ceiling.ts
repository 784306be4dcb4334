// The machine's own ceiling for the fan-out: how much faster two processes of one thread each
// segment than one, with no service in between. bench:fanout measures it in the same run as its
// two cases and reports its speed-up against it, so a shared or throttled machine (two vCPUs that
// do not give twice one's throughput) is told apart from what the fan-out itself costs.
//
// As a module: parallelCeiling() spawns this file as children. As a child
// (`node bench/parallel-ceiling.ts --child <runs>`): loads cpsam on one thread, segments a
// synthetic 2048² image `runs` times, and prints the milliseconds as JSON.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { limitMaskThreads } from "../gpu-runner/engine/masks/mask-threads.ts";
import { loadModel } from "../gpu-runner/engine/model.ts";
import { DEFAULT_MODEL_PATH } from "../gpu-runner/engine/model-choice.ts";
import { segmentImage } from "../gpu-runner/engine/segment.ts";
import { syntheticNuclei } from "../test/fixtures/nuclei-grid.ts";

const SIDE = 2048;

/** One child's work: `runs` segmentations of the same image on one thread. */
async function childRuns(runs: number): Promise<number> {
  limitMaskThreads(1);
  const model = await loadModel(DEFAULT_MODEL_PATH, { executionProvider: "cpu", threads: 1 });
  const { data } = syntheticNuclei(SIDE, SIDE);
  const started = performance.now();
  for (let i = 0; i < runs; i++) {
    const image = { width: SIDE, height: SIDE, channels: 1, bitDepth: 16, sampleFormat: "uint" as const, data: Float32Array.from(data) };
    await segmentImage(image, model, { diameter: 22 });
  }
  return performance.now() - started;
}

function child(runs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const process_ = spawn(process.execPath, [fileURLToPath(import.meta.url), "--child", String(runs)], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    process_.stdout.on("data", (chunk) => (out += chunk));
    process_.on("exit", (code) => (code === 0 ? resolve(JSON.parse(out.trim().split("\n").at(-1)!).ms) : reject(new Error(`ceiling child exited ${code}`))));
  });
}

export interface Ceiling {
  /** One process's time for its runs, alone. */
  aloneMs: number;
  /** Each of two such processes' time for the same runs, side by side (model loading not counted, as alone). */
  togetherMs: [number, number];
  /** The work two do per second against one alone: alone/first + alone/second. */
  speedUp: number;
}

/** One process of `runs` segmentations alone, then two at once. */
export async function parallelCeiling(runs = 3): Promise<Ceiling> {
  const aloneMs = await child(runs);
  const togetherMs = (await Promise.all([child(runs), child(runs)])) as [number, number];
  return { aloneMs, togetherMs, speedUp: aloneMs / togetherMs[0] + aloneMs / togetherMs[1] };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { child: { type: "string" } } });
  if (values.child) {
    console.log(JSON.stringify({ ms: await childRuns(Number(values.child)) }));
  } else {
    const ceiling = await parallelCeiling();
    console.log(
      `one process of one thread: ${(ceiling.aloneMs / 1000).toFixed(1)} s; two at once: ${ceiling.togetherMs.map((ms) => (ms / 1000).toFixed(1)).join(" s and ")} s; ceiling ${ceiling.speedUp.toFixed(2)}x`,
    );
  }
}
