// npm run bench:exports — each export of a 100,000-ROI segmentation (~60 vertices per ROI) from
// local workerd (Miniflare) and local R2, next to a plain read of the raw artifact from the same
// R2 through the same Worker (the ceiling). Prints per format: time to first byte, total time,
// bytes, throughput and its ratio to the raw read, and memory: the Worker isolate's peak V8 heap
// (used, through the inspector protocol's Runtime.getHeapUsage, after a forced GC before each
// request; this is what the 128 MB Workers limit counts) and the workerd process's peak resident
// memory above its level before the request.
//
// Options: --rois N (default 100000), --runs N (default 3, the best run is reported),
// --only <export name> (the raw read always runs first, as the reference).

import { readFileSync, readdirSync } from "node:fs";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { build } from "esbuild";
import { convertV4MiniflareOptions, Miniflare } from "miniflare";
import type { ExportContext } from "../../schema/measurements.ts";
import { encodeRoiArtifact } from "../../schema/roi-artifact-writer.ts";
import { inRasterOrder, roisFromShapes, syntheticShapes } from "../../test/worker/exports/helpers/rois-from-runs.ts";

const { values } = parseArgs({
  options: { rois: { type: "string", default: "100000" }, runs: { type: "string", default: "3" }, only: { type: "string" } },
});
const roiTarget = Number(values.rois);
const runs = Number(values.runs);

// Tiles of 24 px with blobs 17..21 rows tall give about 60 pixel-edge vertices per ROI.
const TILE = 24;
const MIN_HEIGHT = 17;
const columns = Math.ceil(Math.sqrt(roiTarget * 1.6));
const rows = Math.ceil(roiTarget / columns);
const shapes = inRasterOrder(syntheticShapes(columns, rows, TILE, 1, MIN_HEIGHT)).slice(0, roiTarget);
const rois = roisFromShapes(shapes);
const width = columns * TILE;
const height = rows * TILE;
const vertices = rois.reduce((n, r) => n + r.polygon.length / 2, 0);

const chunks: Uint8Array[] = [];
for await (const chunk of encodeRoiArtifact({ imageWidth: width, imageHeight: height, confluency: 0.3, modelName: "bench", modelVersion: "1" }, rois)) chunks.push(chunk);
const artifact = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
chunks.reduce((at, c) => (artifact.set(c, at), at + c.length), 0);

const INSPECTOR_PORT = 9329;
const workDir = mkdtempSync(join(tmpdir(), "bench-exports-"));
const bundle = await build({
  entryPoints: [new URL("./exports-bench-worker.ts", import.meta.url).pathname],
  bundle: true,
  format: "esm",
  platform: "neutral",
  target: "es2023",
  write: false,
});
// R2 persists to disk, as under `wrangler dev`.
// Miniflare 5 takes its own option shape; convertV4MiniflareOptions maps the documented one.
const mf = new Miniflare(
  convertV4MiniflareOptions({
    resourcePersistencePath: workDir,
    inspectorPort: INSPECTOR_PORT,
    workers: [{ name: "bench", modules: true, script: bundle.outputFiles[0].text, compatibilityDate: "2026-10-01", r2Buckets: ["BUCKET"] }],
  }),
);
const base = await mf.ready;
const key = "orgs/bench/segmentations/bench/rois.artifact";
await (await mf.getR2Bucket("BUCKET")).put(key, artifact);

/** A minimal Chrome DevTools protocol client for the Worker's isolate. */
class Inspector {
  private readonly socket: WebSocket;
  private nextId = 1;
  private readonly waiting = new Map<number, (result: Record<string, number>) => void>();

  private constructor(socket: WebSocket) {
    this.socket = socket;
    socket.addEventListener("message", (event) => {
      const message = JSON.parse(String(event.data));
      this.waiting.get(message.id)?.(message.result ?? {});
      this.waiting.delete(message.id);
    });
  }

  static async connect(workerName: string): Promise<Inspector> {
    const targets = (await (await fetch(`http://127.0.0.1:${INSPECTOR_PORT}/json`)).json()) as { id: string; webSocketDebuggerUrl?: string }[];
    const target = targets.find((t) => t.id.includes(workerName)) ?? targets[0];
    const url = target.webSocketDebuggerUrl ?? `ws://127.0.0.1:${INSPECTOR_PORT}/${target.id}`;
    const socket = new WebSocket(url);
    await new Promise((resolve, reject) => {
      socket.addEventListener("open", resolve);
      socket.addEventListener("error", reject);
    });
    return new Inspector(socket);
  }

  send(method: string): Promise<Record<string, number>> {
    const id = this.nextId++;
    this.socket.send(JSON.stringify({ id, method }));
    return new Promise((resolve) => this.waiting.set(id, resolve));
  }

  close(): void {
    this.socket.close();
  }
}

/** Resident memory of every workerd process started for this bench, in bytes. */
function workerdRss(): number {
  let total = 0;
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      if (readFileSync(`/proc/${pid}/comm`, "utf8").trim() !== "workerd") continue;
      const status = readFileSync(`/proc/${pid}/status`, "utf8");
      total += Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) * 1024;
    } catch {
      // The process ended while we looked.
    }
  }
  return total;
}

interface Measurement {
  firstByteMs: number;
  totalMs: number;
  bytes: number;
  peakRssDelta: number;
  peakHeapUsed: number;
}

async function measure(path: string): Promise<Measurement> {
  // workerd runs inspector commands when the isolate wakes, so wake it with trivial requests
  // until the collection has answered.
  let collected = false;
  void inspector.send("HeapProfiler.collectGarbage").then(() => (collected = true));
  for (let i = 0; i < 50 && !collected; i++) {
    await (await fetch(new URL("/raw?key=none", base))).text();
    await new Promise((r) => setTimeout(r, 5));
  }
  let peakHeapUsed = 0;
  let sampling = true;
  const heapSampler = (async () => {
    while (sampling) {
      // A reply can wait for the isolate to wake; never let the sampler block the measurement.
      const usage = await Promise.race([inspector.send("Runtime.getHeapUsage"), new Promise<null>((r) => setTimeout(() => r(null), 50))]);
      if (usage) peakHeapUsed = Math.max(peakHeapUsed, usage.usedSize);
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  const before = workerdRss();
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, workerdRss())), 5);
  const start = performance.now();
  // Like a plain `curl`: no Accept-Encoding, so workerd does not gzip text responses on its CPU
  // (on Cloudflare the edge compresses, outside the Worker's budget).
  const response = await fetch(new URL(path, base), { headers: { "accept-encoding": "identity" } });
  if (!response.ok || !response.body) throw new Error(`${path}: ${response.status} ${await response.text()}`);
  let firstByteMs = -1;
  let bytes = 0;
  for await (const chunk of response.body) {
    if (firstByteMs < 0) firstByteMs = performance.now() - start;
    bytes += chunk.length;
  }
  const totalMs = performance.now() - start;
  clearInterval(sampler);
  sampling = false;
  await heapSampler;
  peak = Math.max(peak, workerdRss());
  return { firstByteMs, totalMs, bytes, peakRssDelta: peak - before, peakHeapUsed };
}

const inspector = await Inspector.connect("bench");
const context: ExportContext = {
  segmentationId: "seg_bench",
  segmentationSource: "model",
  modelName: "bench",
  imageName: "bench plate.tif",
  imageWidth: width,
  imageHeight: height,
  confluency: 0.3,
};
const query = `?key=${encodeURIComponent(key)}&context=${encodeURIComponent(JSON.stringify(context))}`;
const targets: [string, string][] = [
  ["raw artifact (ceiling)", `/raw${query}`],
  ["measurements.csv", `/export/measurements.csv${query}`],
  ["rois.geojson", `/export/rois.geojson${query}`],
  ["rois.zip", `/export/rois.zip${query}`],
  [rois.length > 65535 ? "masks.png (32-bit TIFF)" : "masks.png", `/export/masks.png${query}`],
];

console.log(`bench:exports — ${rois.length} ROIs, ${(vertices / rois.length).toFixed(1)} vertices/ROI, image ${width}x${height}, artifact ${(artifact.length / 1e6).toFixed(2)} MB`);
console.log(`local workerd via Miniflare; time: best of ${runs} runs; memory: worst of ${runs} (isolate heap used; workerd RSS above its pre-request level)\n`);
const MB = 1e6;
let rawThroughput = 0;
let rawMs = 0;
const header = ["export", "first byte ms", "total ms", "time vs raw", "output MB", "MB/s", "MB/s vs raw", "ROIs/s", "peak heap MB", "peak RSS +MB"];
console.log(header.join(" | "));
for (const [name, path] of targets.filter(([n], i) => i === 0 || !values.only || n.startsWith(values.only))) {
  let best: Measurement | null = null;
  let worstRss = 0;
  let worstHeap = 0;
  for (let i = 0; i < runs; i++) {
    const m = await measure(path);
    worstRss = Math.max(worstRss, m.peakRssDelta);
    worstHeap = Math.max(worstHeap, m.peakHeapUsed);
    if (!best || m.totalMs < best.totalMs) best = m;
  }
  const m = best!;
  const throughput = m.bytes / MB / (m.totalMs / 1000);
  if (rawThroughput === 0) {
    rawThroughput = throughput;
    rawMs = m.totalMs;
  }
  console.log(
    [
      name,
      m.firstByteMs.toFixed(1),
      m.totalMs.toFixed(0),
      (m.totalMs / rawMs).toFixed(2),
      (m.bytes / MB).toFixed(1),
      throughput.toFixed(1),
      (throughput / rawThroughput).toFixed(2),
      Math.round(rois.length / (m.totalMs / 1000)).toString(),
      (worstHeap / MB).toFixed(1),
      (worstRss / MB).toFixed(1),
    ].join(" | "),
  );
}
inspector.close();
await mf.dispose();
rmSync(workDir, { recursive: true, force: true });
