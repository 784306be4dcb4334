// npm run bench:e2e: what the service adds around the engine, on the local stack.
//  1. Engine alone: segmentImage on a 1024x1024 image in this process (the reference).
//  2. Overhead: submit -> COMPLETED through worker + runner, minus the engine's own time.
//  3. Throughput: several queued jobs (one per organization: each may run one prediction at a
//     time) through one runner, against the engine's own images per second.
// Uses a 1024x1024 crop of a real Kromp image when ../shared is present, else a synthetic one.
import { existsSync, readFileSync } from "node:fs";
import { encode as encodePng } from "fast-png";
import { BASE_MODEL_DIR } from "../scripts/public-models.ts";
import { startStack } from "../scripts/local-stack.ts";
import { syntheticNuclei } from "../test/fixtures/nuclei-grid.ts";
import { decodeImage, type DecodedImage } from "../common/decode/index.ts";
import { loadModel } from "../gpu-runner/engine/model.ts";
import { segmentImage } from "../gpu-runner/engine/segment.ts";

const SIZE = 1024;
const QUEUED = Number(process.env.BENCH_JOBS ?? 6);
const KROMP = "../shared/data/nuclei/kromp/images/Neuroblastoma_2.tif";

function benchImage(): { png: Uint8Array; image: DecodedImage; source: string } {
  let data: Uint16Array;
  let source: string;
  if (existsSync(KROMP)) {
    const full = decodeImage(new Uint8Array(readFileSync(KROMP)));
    data = new Uint16Array(SIZE * SIZE);
    for (let y = 0; y < SIZE; y++) {
      for (let x = 0; x < SIZE; x++) {
        let sum = 0;
        // In range: c, y % height and x % width index the decoded planes.
        for (let c = 0; c < full.channels; c++) sum += full.data[c * full.width * full.height + (y % full.height) * full.width + (x % full.width)]!;
        data[y * SIZE + x] = Math.round((sum / full.channels) * 256);
      }
    }
    source = `${KROMP} (crop, channel mean)`;
  } else {
    data = syntheticNuclei(SIZE, SIZE).data;
    source = "synthetic nuclei";
  }
  const png = encodePng({ width: SIZE, height: SIZE, data, depth: 16, channels: 1 });
  return { png, image: decodeImage(png), source };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

async function main() {
  const { png, image, source } = benchImage();
  console.log(`image: ${SIZE}x${SIZE} 16-bit PNG from ${source}; model: ${BASE_MODEL_DIR}`);

  const model = await loadModel(`${BASE_MODEL_DIR}/cpsam.onnx`, { executionProvider: "cpu", log: () => undefined });
  // The runner segments with diameter "auto" when a job gives none; so does the reference.
  await segmentImage(image, model, { diameter: "auto" }); // warm-up
  const engineMs: number[] = [];
  for (let i = 0; i < 3; i++) {
    const t = performance.now();
    decodeImage(png);
    await segmentImage(image, model, { diameter: "auto" });
    engineMs.push(performance.now() - t);
  }
  await model.session.release();
  const engine = median(engineMs);
  console.log(`engine alone (decode + segment), median of 3: ${engine.toFixed(0)} ms = ${(1000 / engine).toFixed(2)} images/s`);

  const stack = await startStack();
  const runner = stack.startRunner({ RUNNER_ID: "bench", RUNNER_CONCURRENCY: process.env.RUNNER_CONCURRENCY ?? "2" });
  try {
    const own = { key: stack.key };
    const orgs = [own];
    for (let i = 1; i < QUEUED; i++) {
      const slug = `bench-${i}`;
      await stack.admin.createOrganization(slug, { plan: "enterprise" });
      orgs.push({ key: (await stack.admin.createKey(slug)).key });
    }
    const call = async (key: string, path: string, init: RequestInit = {}) => {
      const response = await fetch(stack.api + path, { ...init, headers: { Authorization: `Bearer ${key}`, ...init.headers } });
      if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
      return response.json() as Promise<Record<string, unknown>>;
    };
    const uploadFor = async (key: string) => {
      const form = new FormData();
      form.append("file", new File([png as Uint8Array<ArrayBuffer>], "bench.png"));
      return ((await call(key, "/upload", { method: "POST", body: form })).image as { id: string }).id;
    };
    const predict = async (key: string, imageId: string) =>
      (
        await call(key, "/predict", {
          method: "POST",
          body: JSON.stringify({ image_id: imageId, model_id: "cpsam" }),
          headers: { "Content-Type": "application/json" },
        })
      ).prediction_id as string;
    // Tight polling for the single-job overhead; gentler for the queue, where the polls of several
    // jobs would otherwise take CPU from the runner they are measuring.
    const waitDone = async (key: string, id: string, pollMs = 10) => {
      for (;;) {
        const p = await call(key, `/predict/${id}`);
        if (p.status === "COMPLETED" || p.status === "FAILED") return p;
        await new Promise((r) => setTimeout(r, pollMs));
      }
    };

    const images = await Promise.all(orgs.map((o) => uploadFor(o.key)));
    // One image per organization, in order; the single-job runs below use the stack's own.
    const ownImage = images[0]!;
    // Warm the runner's model cache and session, as a long-running runner would be.
    await waitDone(own.key, await predict(own.key, ownImage));

    const overheads: string[] = [];
    const walls: number[] = [];
    for (let i = 0; i < 3; i++) {
      const t = performance.now();
      const id = await predict(own.key, ownImage);
      const done = await waitDone(own.key, id);
      const wall = performance.now() - t;
      walls.push(wall);
      const seg = (await call(own.key, `/segmentation/${done.segmentation_id}`)).timings as Record<string, number>;
      // Everything the runner timed except fetching the inputs and its own total is engine work.
      const runnerEngine = Object.entries(seg)
        .filter(([k]) => k !== "fetch_ms" && k !== "total_ms")
        .reduce((n, [, v]) => n + v, 0);
      overheads.push(
        `${wall.toFixed(0)} ms wall, runner's engine ${runnerEngine} ms -> overhead ${(wall - runnerEngine).toFixed(0)} ms (runner: ${JSON.stringify(seg)})`,
      );
    }
    console.log(`submit -> COMPLETED:\n  ${overheads.join("\n  ")}`);
    console.log(`overhead vs the in-process engine (median wall - engine): ${(median(walls) - engine).toFixed(0)} ms`);

    const t = performance.now();
    const ids = await Promise.all(orgs.map((o, i) => predict(o.key, images[i]!)));
    await Promise.all(ids.map((id, i) => waitDone(orgs[i]!.key, id, 250)));
    const seconds = (performance.now() - t) / 1000;
    const throughput = orgs.length / seconds;
    console.log(
      `throughput, ${orgs.length} queued jobs through one runner (concurrency ${process.env.RUNNER_CONCURRENCY ?? 2}): ${throughput.toFixed(2)} images/s = ${((throughput * engine) / 1000).toFixed(3)} x the engine's own`,
    );
  } finally {
    runner.kill("SIGTERM");
    await stack.stop();
  }
}

await main();
