// npm run bench:exports — each export of a 100,000-ROI segmentation (~60 vertices per ROI)
// downloaded the way a user downloads it: `curl` with the API key against the real app's route
// GET /api/v1/export/{id}/{format}, on the local stack (`wrangler dev`, local D1 and R2). The
// ceiling is `curl` of the raw ROI artifact from the same local R2 through a signed storage URL
// (GET /api/v1/storage/...: no decoding, no formatting). Prints per format: time to first byte,
// total time, bytes, throughput and its ratio to the raw read, and memory: the Worker isolate's
// peak V8 heap (used, through the inspector protocol's Runtime.getHeapUsage, after a forced GC
// before each request; this is what the Workers memory limit counts) and the workerd process's
// peak resident memory above its level before the request.
//
// Options: --rois N (default 100000), --runs N (default 3, the best run is reported),
// --only <export name> (the raw read always runs first, as the reference). measurements.csv and
// rois.geojson run twice: with the default columns and with the shape group added
// (`columns=default&columns=shape`); `--only measurements.csv` runs both of the CSV.
// --channels N (default 0) gives every cell intensities of N channels (ROI artifact version 2) and
// adds the CSV and GeoJSON with the intensity group.

import { execFile } from "node:child_process";
import { createWriteStream, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import { parseArgs } from "node:util";
import { encodeRoiArtifact } from "../common/roi-artifact/writer.ts";
import { freePort, startStack } from "../scripts/local-stack.ts";
import { inRasterOrder, roisFromShapes, syntheticShapes } from "../test/fixtures/rois-from-runs.ts";
import { Inspector } from "./exports-inspector.ts";
import { artifactKey } from "../schema/storage-keys.ts";

const { values } = parseArgs({
  options: {
    rois: { type: "string", default: "100000" },
    runs: { type: "string", default: "3" },
    only: { type: "string" },
    channels: { type: "string", default: "0" },
  },
});
const channelCount = Number(values.channels);
if (!Number.isInteger(channelCount) || channelCount < 0 || channelCount > 64) throw new Error(`--channels must be 0..64, got ${values.channels}`);
const roiTarget = Number(values.rois);
const runs = Number(values.runs);
if (!Number.isInteger(roiTarget) || roiTarget < 1) throw new Error(`--rois must be a positive integer, got ${values.rois}`);
if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs must be a positive integer, got ${values.runs}`);

// Tiles of 24 px with blobs 17..21 rows tall give about 60 pixel-edge vertices per ROI.
const TILE = 24;
const MIN_HEIGHT = 17;
const columns = Math.ceil(Math.sqrt(roiTarget * 1.6));
const rows = Math.ceil(roiTarget / columns);
const shapes = inRasterOrder(syntheticShapes(columns, rows, TILE, 1, MIN_HEIGHT)).slice(0, roiTarget);
// With --channels N, every cell carries intensities of N channels (ROI artifact version 2), as a
// prediction's do: 48 bytes a channel a cell.
const rois = roisFromShapes(shapes).map((roi) =>
  channelCount === 0 ? roi : { ...roi, intensity: Float64Array.from({ length: 6 * channelCount }, (_, i) => 1000 + ((roi.index * 37 + i * 101) % 4096) / 3) },
);
const channelNames = Array.from({ length: channelCount }, (_, c) => `c${c}`);
const width = columns * TILE;
const height = rows * TILE;
const vertices = rois.reduce((n, r) => n + r.polygon.length / 2, 0);

const workDir = mkdtempSync(join(tmpdir(), "bench-exports-"));
const artifactFile = join(workDir, "rois.bin");
await pipeline(
  encodeRoiArtifact({ imageWidth: width, imageHeight: height, confluency: 0.3, modelName: "bench", modelVersion: "1", channelNames }, rois),
  createWriteStream(artifactFile),
);
const artifactBytes = statSync(artifactFile).size;

const inspectorPort = await freePort();
const stack = await startStack({ inspectorPort });
const origin = new URL(stack.api).origin;

// The segmentation as a finished prediction leaves it: its artifact in R2 and its row in D1.
const [org] = stack.sql("SELECT id FROM organizations LIMIT 1") as { id: string }[];
if (!org) throw new Error("the local stack has no organization");
const orgId = org.id;
const segmentationId = "seg_bench";
const key = artifactKey(orgId, segmentationId);
stack.r2Put(key, artifactFile);
stack.sql(
  "INSERT INTO segmentations (id, org_id, image_id, image_name, model_name, model_version, source, roi_count, confluency, width, height, artifact_key) " +
    `VALUES ('${segmentationId}', '${orgId}', 'img_bench', 'bench plate.tif', 'bench', '1', 'model', ${rois.length}, 0.3, ${width}, ${height}, '${key}')`,
);

// The Worker's own signing code. Its module types its env with Workers types, which the Node
// typecheck does not load, so it is imported by a computed specifier (Node runs it as is).
type SignStorageUrl = (env: { SIGNED_URL_MODE: "worker"; SIGNING_KEY: string }, origin: string, target: { method: "GET"; key: string }) => Promise<string>;
const signedUrlsModule = "../../worker/services/signed-urls.ts";
const { signStorageUrl } = (await import(signedUrlsModule)) as { signStorageUrl: SignStorageUrl };
const rawUrl = await signStorageUrl({ SIGNED_URL_MODE: "worker", SIGNING_KEY: stack.signingKey }, origin, { method: "GET", key });

/** Every process below `root` (wrangler's workerd runs there), by /proc's parent links. */
function descendants(root: number): number[] {
  const parents = new Map<number, number>();
  for (const entry of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      // The command name may hold spaces and parentheses; the parent pid follows its last ")".
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      // The process ended while we looked.
    }
  }
  const found: number[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const pid = queue.pop()!;
    for (const [child, parent] of parents) {
      if (parent !== pid) continue;
      found.push(child);
      queue.push(child);
    }
  }
  return found;
}

const workerdPids = descendants(stack.workerPid).filter((pid) => {
  try {
    return readFileSync(`/proc/${pid}/comm`, "utf8").trim() === "workerd";
  } catch {
    return false;
  }
});
if (workerdPids.length === 0) throw new Error("found no workerd process below wrangler dev");

/** Resident memory of this stack's workerd, in bytes. */
function workerdRss(): number {
  let total = 0;
  for (const pid of workerdPids) {
    try {
      total += Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) * 1024;
    } catch {
      // The process ended while we looked.
    }
  }
  return total;
}

interface Download {
  status: number;
  firstByteMs: number;
  totalMs: number;
  bytes: number;
}

/** A plain `curl` download to /dev/null: no Accept-Encoding, so nothing is gzipped on the way. */
function curl(url: string, headers: string[]): Promise<Download> {
  const args = ["-sS", "-o", "/dev/null", "-w", "%{http_code} %{time_starttransfer} %{time_total} %{size_download}", ...headers.flatMap((h) => ["-H", h]), url];
  return new Promise((resolve, reject) => {
    execFile("curl", args, (error, stdout, stderr) => {
      if (error) return reject(new Error(`curl ${url}: ${stderr || error.message}`));
      const [status, firstByte, total, bytes] = stdout.trim().split(" ").map(Number);
      if (status === undefined || firstByte === undefined || total === undefined || bytes === undefined) {
        return reject(new Error(`curl ${url}: expected four numbers from -w, got ${JSON.stringify(stdout)}`));
      }
      resolve({ status, firstByteMs: firstByte * 1000, totalMs: total * 1000, bytes });
    });
  });
}

interface Measurement extends Download {
  peakRssDelta: number;
  peakHeapUsed: number;
}

async function measure(inspector: Inspector, url: string, headers: string[]): Promise<Measurement> {
  // workerd runs inspector commands when the isolate wakes, so wake it with trivial requests
  // (unauthenticated: answered 401 before any D1 or R2 work) until the collection has answered.
  let collected = false;
  void inspector.send("HeapProfiler.collectGarbage").then(() => (collected = true));
  for (let i = 0; i < 50 && !collected; i++) {
    await (await fetch(`${origin}/api/v1/models`)).text();
    await new Promise((r) => setTimeout(r, 5));
  }
  if (!collected) throw new Error("the isolate did not run the forced GC");
  let peakHeapUsed = 0;
  let sampling = true;
  const heapSampler = (async () => {
    while (sampling) {
      // A reply can wait for the isolate to wake; never let the sampler block the measurement.
      const usage = await Promise.race([inspector.send("Runtime.getHeapUsage"), new Promise<null>((r) => setTimeout(() => r(null), 50))]);
      const used = usage?.usedSize;
      if (used !== undefined) peakHeapUsed = Math.max(peakHeapUsed, used);
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  const before = workerdRss();
  let peak = before;
  const rssSampler = setInterval(() => (peak = Math.max(peak, workerdRss())), 5);
  const download = await curl(url, headers).finally(() => {
    clearInterval(rssSampler);
    sampling = false;
  });
  await heapSampler;
  peak = Math.max(peak, workerdRss());
  if (download.status !== 200) throw new Error(`${url}: HTTP ${download.status}`);
  return { ...download, peakRssDelta: peak - before, peakHeapUsed };
}

const authorization = [`Authorization: Bearer ${stack.key}`];
const exportUrl = (format: string) => `${stack.api}/export/${segmentationId}/${format}`;
const targets: [string, string, string[]][] = [
  ["raw artifact (ceiling)", rawUrl, []],
  ["measurements.csv", exportUrl("measurements.csv"), authorization],
  // The default 20 columns and the shape group, computed from each outline as the export streams.
  ["measurements.csv?columns=default&columns=shape", exportUrl("measurements.csv?columns=default&columns=shape"), authorization],
  ["rois.geojson", exportUrl("rois.geojson"), authorization],
  ["rois.geojson?columns=default&columns=shape", exportUrl("rois.geojson?columns=default&columns=shape"), authorization],
  ...(channelCount > 0
    ? [
        ["measurements.csv?columns=default&columns=intensity", exportUrl("measurements.csv?columns=default&columns=intensity"), authorization] as [
          string,
          string,
          string[],
        ],
        ["rois.geojson?columns=default&columns=intensity", exportUrl("rois.geojson?columns=default&columns=intensity"), authorization] as [
          string,
          string,
          string[],
        ],
      ]
    : []),
  ["rois.zip", exportUrl("rois.zip"), authorization],
  // masks.png holds 65,535 cells at most (the service answers 422 above); masks.tif any number.
  ...(rois.length <= 65_535 ? [["masks.png", exportUrl("masks.png"), authorization] as [string, string, string[]]] : []),
  ["masks.tif", exportUrl("masks.tif"), authorization],
];

// wrangler dev logs every request to this terminal, so the table is printed once it has stopped.
const report: string[] = [];
try {
  const inspector = await Inspector.connect(inspectorPort);
  report.push(
    `bench:exports — ${rois.length} ROIs, ${(vertices / rois.length).toFixed(1)} vertices/ROI, ${channelCount} channel(s) of intensities, image ${width}x${height}, artifact ${(artifactBytes / 1e6).toFixed(2)} MB`,
  );
  report.push(
    `the app's export route under wrangler dev (local D1 + R2), downloaded with curl; time: best of ${runs} runs; memory: worst of ${runs} (isolate heap used; workerd RSS above its pre-request level)`,
    "",
  );
  const MB = 1e6;
  let rawThroughput = 0;
  let rawMs = 0;
  const header = ["export", "first byte ms", "total ms", "time vs raw", "output MB", "MB/s", "MB/s vs raw", "ROIs/s", "peak heap MB", "peak RSS +MB"];
  report.push(header.join(" | "));
  for (const [name, url, headers] of targets.filter(([n], i) => i === 0 || !values.only || n.startsWith(values.only))) {
    let best: Measurement | null = null;
    let worstRss = 0;
    let worstHeap = 0;
    for (let i = 0; i < runs; i++) {
      const m = await measure(inspector, url, headers);
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
    report.push(
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
} finally {
  await stack.stop();
  rmSync(workDir, { recursive: true, force: true });
  console.log(`\n${report.join("\n")}`);
}
