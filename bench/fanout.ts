// npm run bench:fanout [-- --sides 8192,16384] [--glass 0.7] [--work DIR] [--keep]
//                         [--single-pass-mp N] [--block-memory-mb N] [--no-ceiling] [--one-runner-only]
// A block-wise prediction fanned out over runners (issue #34): does a second runner make a whole
// slide faster, what does a block cost beyond the single-runner path, and does glass cost nothing?
//
// For each side of --sides, a synthetic fluorescence mosaic (test/fixtures/mosaic.ts) written as an
// uncompressed tiled 16-bit BigTIFF (bench/tiled-bigtiff-file.ts, as bench:big-service; cached in the
// work dir as mosaic-<side>.tif) is uploaded through the client's upload (client/upload.ts, as
// `npm run client -- segment` does) and predicted, model cpsam, diameter "auto" (the survey's
// estimate, as bench:big-service), on ONE local stack (scripts/local-stack.ts) for all cases:
//   (a) one runner of one thread (RUNNER_THREADS=1, RUNNER_CONCURRENCY=1),
//   (b) two such runners; the runners of a case are started before its submission (each waits for
//       its first line) and stopped (SIGTERM, awaited) after it.
// The file is uploaded once per case: the first prediction of an image also makes the image's
// preview (each block's share and the merge's tile pyramid: seconds in the merge attempt, the smoke
// run found), so with one upload the second case would do less work than the first. The two
// predictions are otherwise identical (same file, model and parameters); every submission is checked
// to be queued anew, not answered "skipped" (the API dedupes identical *active* jobs only).
// Per case it prints: wall time from submit to COMPLETED (polled every 250 ms) and the prediction's
// own started-to-finished time; cells against the mosaic's truth; blocks (and glass blocks); the plan
// (the first attempt's lease to its blocks queued: model, open, survey), the merge (merge_ms, the
// merge attempt's total_ms, and last block done to COMPLETED); the per-stage times summed over the
// blocks (from the block tasks' own results, read from the stack's D1) against the block tasks' spans
// (lease to completion) and the wall; per-block overhead = (wall x runners - summed stage times) /
// blocks (for (a): (wall - summed stage times) / blocks, what a block costs beyond its stages: the
// plan, the merge, leases, opening the file, the glass test, the parts' uploads); blocks per runner;
// bytes read against the file. Per side: the speed-up wall(a)/wall(b) (target >= 1.6x); the summed
// stage times of (b) against (a)'s (above 1: the blocks' own work slowed as two ran side by side,
// cores shared, not the fan-out's cost); and whether the two predictions found the same cells (the
// CSV and GeoJSON exports compared line by line as text, the ids of the segmentation and the image
// replaced: "same cells", or how many lines differ).
// Before the first side, the machine's ceiling (bench/parallel-ceiling.ts): cpsam on a 2048² image
// in one process of one thread, then in two side by side; the work two do against one is what any
// fan-out over two one-thread runners can reach here, and the speed-up is also given as its share
// of that (--no-ceiling skips it).
// --glass F (default 0.7; 0 skips it): a third case, at the smallest side of --sides (or at
// --glass-side N, one of them: on a larger slide the glass falls on more whole blocks): the same mosaic
// with the right-hand F of its nucleus grid empty glass (background and noise only; cached as
// mosaic-<side>-glass<F*100>.tif), segmented with one runner; its wall time as a fraction of the full
// mosaic's (a) (target < 0.40), and its glass blocks.
// --single-pass-mp N and --block-memory-mb N are handed to the runners as SINGLE_PASS_MP and
// BLOCK_MEMORY_MB (set in the environment instead, they reach the runners all the same): a smoke run
// makes a small image block-wise with them, e.g.
//   npm run bench:fanout -- --sides 2048 --glass 0.7 --single-pass-mp 1 --block-memory-mb 64
// A side segmented in one pass (side² at most the single-pass size, default 16.8 MP) is refused: it
// has no fan-out to measure.
// --one-runner-only: case (a) alone for each side, no two-runner case and no ceiling: what the glass
// case needs, when a large side's two-runner figure is not wanted (32768² with one runner is half an
// hour of a 2-core machine).
// --zeros-png SIDE: one more case, a SIDE² 8-bit grayscale PNG of zeros (a few hundred KB, cached as
// zeros-<side>.png) with one runner: glass everywhere, which should take seconds, not the slide's
// time (issue #34: "a 20000x20000 PNG of zeros ... should finish in seconds"). `--sides none --glass 0
// --zeros-png 20000` runs it alone.
// --work DIR: the mosaics, runner logs (logs/), exports (exports/) and fanout-results.json (default
// $TMPDIR/cellseg-bench-fanout). --keep keeps the downloaded exports (removed after the comparison
// otherwise; the mosaics are always kept as the cache). No ../shared needed. `wrangler dev` reloads
// the worker whenever a file under worker/ or schema/ changes: an edit there mid-run (a half-written
// one can fail every lease until it is finished) spoils that case's times.
import type { ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { once } from "node:events";
import { createReadStream, createWriteStream, existsSync, mkdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { basename, join } from "node:path";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { createDeflate } from "node:zlib";
import { SINGLE_PASS_PIXELS } from "../gpu-runner/engine/blocks/segment-blocks.ts";
import type { PredictionRecord, PredictionSubmission, SegmentationRecord } from "../schema/api-records.ts";
import { type LocalStack, startStack } from "../scripts/local-stack.ts";
import { CLOUDFLARE_BODY_LIMIT, DEFAULT_RESUMABLE_ABOVE } from "../client/body-limit.ts";
import { connect } from "../client/connection.ts";
import { downloadExport, type ExportFormat, exportFile } from "../client/exports.ts";
import { ApiError, type Http } from "../client/http.ts";
import { uploadImage } from "../client/upload.ts";
import { PNG_SIGNATURE, pngChunk } from "../common/png-chunks.ts";
import { SyntheticMosaic } from "../test/fixtures/mosaic.ts";
import { writeTiledBigTiff } from "./tiled-bigtiff-file.ts";
import { type Ceiling, parallelCeiling } from "./parallel-ceiling.ts";

const USAGE =
  "npm run bench:fanout [-- --sides 8192,16384|none] [--glass 0.7] [--work DIR] [--keep] [--single-pass-mp N] [--block-memory-mb N] [--no-ceiling] [--glass-side N] [--one-runner-only] [--zeros-png SIDE]";

const { values } = parseArgs({
  options: {
    sides: { type: "string", default: "8192,16384" },
    glass: { type: "string", default: "0.7" },
    work: { type: "string" },
    keep: { type: "boolean", default: false },
    "single-pass-mp": { type: "string" },
    "block-memory-mb": { type: "string" },
    "no-ceiling": { type: "boolean", default: false },
    "one-runner-only": { type: "boolean", default: false },
    "glass-side": { type: "string" },
    "zeros-png": { type: "string" },
    help: { type: "boolean", short: "h" },
  },
});
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}

function fail(message: string): never {
  console.error(`${message}\n${USAGE}`);
  process.exit(2);
}

const sides = values.sides === "none" ? [] : values.sides.split(",").map((s) => Number(s.trim()));
if (sides.some((s) => !Number.isInteger(s) || s < 256)) fail(`--sides must be whole numbers of at least 256, or none, got ${values.sides}`);
const glassFraction = Number(values.glass);
if (!(glassFraction >= 0 && glassFraction < 1)) fail(`--glass must be a fraction from 0 (no glass case) to below 1, got ${values.glass}`);
const zerosSide = values["zeros-png"] === undefined ? undefined : Number(values["zeros-png"]);
if (zerosSide !== undefined && !(Number.isInteger(zerosSide) && zerosSide >= 256))
  fail(`--zeros-png must be a side of at least 256, got ${values["zeros-png"]}`);
if (sides.length === 0 && zerosSide === undefined) fail("nothing to measure: give --sides, or --sides none with --zeros-png");
const runnerEnv: Record<string, string> = {
  ...(values["single-pass-mp"] !== undefined && { SINGLE_PASS_MP: values["single-pass-mp"] }),
  ...(values["block-memory-mb"] !== undefined && { BLOCK_MEMORY_MB: values["block-memory-mb"] }),
};
const singlePassSetting = runnerEnv.SINGLE_PASS_MP ?? process.env.SINGLE_PASS_MP;
const singlePassPixels = singlePassSetting ? Number(singlePassSetting) * 1e6 : SINGLE_PASS_PIXELS;
if (!(singlePassPixels >= 0)) fail(`SINGLE_PASS_MP must be a number of megapixels, got ${singlePassSetting}`);
for (const side of zerosSide === undefined ? sides : [...sides, zerosSide]) {
  if (side * side <= singlePassPixels) {
    fail(`${side}² is segmented in one pass (single-pass size ${(singlePassPixels / 1e6).toFixed(1)} MP): no fan-out to measure; lower --single-pass-mp`);
  }
}
const glassSide = values["glass-side"] === undefined ? Math.min(...sides) : Number(values["glass-side"]);
if (glassFraction > 0 && !sides.includes(glassSide))
  fail(`--glass-side must be one of --sides (its full mosaic's time is the reference), got ${values["glass-side"]}`);
const work = values.work ?? join(tmpdir(), "cellseg-bench-fanout");
const logs = join(work, "logs");
const exportsDir = join(work, "exports");
mkdirSync(logs, { recursive: true });

const POLL_MS = 250;
/** IDAT chunk size of the zeros PNG (writers use 8 KiB to 1 MiB). */
const IDAT_BYTES = 2 ** 20;
const MODEL = "cpsam";
/** The prediction's parameters: none, as `npm run client -- segment` sends without flags (diameter "auto"). */
const PARAMS: Record<string, unknown> = {};
const FORMATS: ExportFormat[] = ["csv", "geojson"];

const seconds = (ms: number) => (ms / 1000).toFixed(1);
const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
const int = (n: number) => n.toLocaleString("en-US");
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface BlockRow {
  block_index: number;
  lease_holder: string | null;
  attempts: number;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
  /** JSON text (or, should wrangler parse it, the object). */
  result: string | object | null;
}

interface CaseResult {
  side: number;
  label: "a" | "b" | "glass";
  runners: number;
  glass_fraction: number;
  file: string;
  file_bytes: number;
  truth: number;
  image_id: string;
  prediction_id: string;
  segmentation_id: string;
  cells: number;
  /** Submit (before the POST) to COMPLETED seen by the poll. */
  wall_ms: number;
  /** The prediction's own times (the job row's, ms). */
  queued_ms: number;
  started_to_finished_ms: number;
  started_at: string | null;
  finished_at: string | null;
  blocks: number;
  glass_blocks: number;
  /** The first attempt's lease to its blocks queued: model, open, survey, plan. */
  plan_ms: number;
  /** Blocks queued to the first block leased. */
  first_block_wait_ms: number;
  /** First block leased to the last block done. */
  blocks_ms: number;
  /** Last block done to the prediction COMPLETED: the merge's wake-up, lease, merge, upload and completion. */
  merge_phase_ms: number;
  merge_ms: number | null;
  merge_attempt_total_ms: number | null;
  /** Milliseconds per stage (read, normalize, ..., intensity) summed over the blocks, from the block tasks' results. */
  block_stage_ms: Record<string, number>;
  block_stage_sum_ms: number;
  /** Sum over the blocks of lease (first attempt) to completion. */
  block_spans_ms: number;
  /** Per runner, the time between one block's completion and its next block's lease, summed. */
  gaps_between_blocks_ms: number;
  /** (wall x runners - block_stage_sum) / blocks: runner time beyond the blocks' stages, per block. */
  per_block_overhead_ms: number;
  /** (block spans - stage sums) / blocks: inside a block task, around its stages (open, glass test, parts upload, completion). */
  in_block_overhead_ms: number;
  /** Block spans / (wall x runners). */
  runner_utilisation: number;
  blocks_by_runner: Record<string, number>;
  block_attempts: number;
  read_bytes: number | null;
  /** The segmentation record's timings (GET /segmentation/{id}). */
  timings: Record<string, unknown> | null;
}

interface SideResult {
  side: number;
  speed_up: number;
  speed_up_own_times: number;
  /** Summed stage times of (b) over (a)'s. */
  stage_sums_b_over_a: number;
  same_cells: boolean;
  differing: Record<string, { only_a: number; only_b: number; lines_a: number; lines_b: number }>;
}

/** The mosaic's file, written unless the work dir has it from an earlier run. */
async function mosaicFile(side: number, glass: number): Promise<{ file: string; truth: number }> {
  const mosaic = new SyntheticMosaic(side, side, { glass });
  const file = join(work, glass > 0 ? `mosaic-${side}-glass${Math.round(glass * 100)}.tif` : `mosaic-${side}.tif`);
  const started = performance.now();
  const cached = existsSync(file);
  if (!cached) await writeTiledBigTiff(file, mosaic.regions());
  const truth = mosaic.count();
  console.log(
    `image ${file}: ${side}²${glass > 0 ? `, ${Math.round(glass * 100)} % glass` : ""}, ${mib(statSync(file).size)}, ${int(truth)} nuclei` +
      ` (${cached ? "cached" : `written in ${seconds(performance.now() - started)} s`})`,
  );
  return { file, truth };
}

/**
 * A side² 8-bit grayscale PNG of zeros, every row unfiltered: a few hundred KB that inflate to side²
 * bytes (the issue's "20000x20000 PNG of zeros"), written unless the work dir has it.
 */
async function zerosPngFile(side: number): Promise<string> {
  const file = join(work, `zeros-${side}.png`);
  if (!existsSync(file)) {
    const deflate = createDeflate({ level: 9 });
    const compressed: Buffer[] = [];
    deflate.on("data", (chunk: Buffer) => compressed.push(chunk));
    const ended = once(deflate, "end");
    const row = new Uint8Array(side + 1); // filter byte 0, then side zeros; never changed, so one buffer serves every write
    for (let y = 0; y < side; y++) if (!deflate.write(row)) await once(deflate, "drain");
    deflate.end();
    await ended;
    const data = Buffer.concat(compressed);
    const header = new Uint8Array(13);
    new DataView(header.buffer).setUint32(0, side);
    new DataView(header.buffer).setUint32(4, side);
    header[8] = 8; // bit depth; grayscale, deflate, filter method 0, no interlace
    const chunks = [PNG_SIGNATURE, pngChunk("IHDR", header)];
    for (let at = 0; at < data.length; at += IDAT_BYTES) chunks.push(pngChunk("IDAT", data.subarray(at, at + IDAT_BYTES)));
    chunks.push(pngChunk("IEND", new Uint8Array(0)));
    writeFileSync(file, Buffer.concat(chunks));
  }
  console.log(`image ${file}: ${side}² of zeros, 8-bit grayscale PNG, ${mib(statSync(file).size)}`);
  return file;
}

/** Starts `count` runners of one thread on the stack, their output in logs/; resolves once each has printed its first line. */
async function startRunners(stack: LocalStack, label: string, count: number): Promise<ChildProcess[]> {
  const runners: ChildProcess[] = [];
  const ready: Promise<void>[] = [];
  for (let i = 1; i <= count; i++) {
    const id = `fanout-${label}-${i}`;
    const runner = stack.startRunner({ RUNNER_ID: id, RUNNER_THREADS: "1", RUNNER_CONCURRENCY: "1", ...runnerEnv }, "pipe");
    const log = createWriteStream(join(logs, `${id}.log`));
    runner.stdout!.pipe(log);
    runner.stderr!.pipe(log);
    ready.push(
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`runner ${id} did not say it was pulling within 60 s (see ${join(logs, `${id}.log`)})`)), 60_000);
        let seen = "";
        runner.stderr!.on("data", (chunk) => {
          seen += String(chunk);
          if (seen.includes("pulling from")) {
            clearTimeout(timer);
            resolve();
          }
        });
        runner.once("exit", (code) => {
          clearTimeout(timer);
          reject(new Error(`runner ${id} exited (${code}) before it pulled (see ${join(logs, `${id}.log`)})`));
        });
      }),
    );
    runners.push(runner);
  }
  await Promise.all(ready);
  return runners;
}

/** SIGTERM to each runner, and waits until all have exited (they have no job in hand by then). */
async function stopRunners(runners: ChildProcess[]): Promise<void> {
  await Promise.all(
    runners.map((runner) => {
      if (runner.exitCode !== null || runner.signalCode !== null) return Promise.resolve();
      const exited = new Promise<void>((resolve) => runner.once("exit", () => resolve()));
      runner.kill("SIGTERM");
      return exited;
    }),
  );
}

/** POST /predict, waiting its turn (400: another prediction runs; 409: the image converts); refuses "skipped". */
async function submit(http: Http, imageId: string): Promise<string> {
  for (;;) {
    try {
      const answer = await http.json<PredictionSubmission>("POST", "/predict", { json: { image_id: imageId, model_id: MODEL, params: PARAMS } });
      if (answer.status !== "SUBMITTED") throw new Error(`the prediction was answered ${answer.status} (${answer.prediction_id}), not queued anew`);
      return answer.prediction_id;
    } catch (error) {
      if (!(error instanceof ApiError) || (error.status !== 400 && error.status !== 409)) throw error;
      await sleep(1000);
    }
  }
}

/** A prediction record with its blocks (present while a block-wise prediction runs and once it is done). */
type Prediction = PredictionRecord & { blocks?: { total: number; done: number; glass: number } | null };

/** Polls until COMPLETED (or throws on FAILED), printing the blocks as they move. */
async function untilDone(http: Http, id: string, label: string): Promise<Prediction> {
  let shown = "";
  for (;;) {
    const p = await http.json<Prediction>("GET", `/predict/${id}`);
    if (p.status === "FAILED") throw new Error(`prediction ${id} FAILED: ${p.reason}`);
    if (p.status === "COMPLETED") return p;
    const stage = p.stage && !p.stage.startsWith("blocks") ? `, ${p.stage}` : "";
    const now = p.blocks ? `blocks ${p.blocks.done} of ${p.blocks.total} (${p.blocks.glass} glass)${stage}` : `${p.status} ${p.stage ?? ""}`;
    if (now !== shown) console.log(`  (${label}) ${now}`);
    shown = now;
    await sleep(POLL_MS);
  }
}

const hexId = (id: string) => {
  if (!/^[A-Za-z0-9_-]+$/.test(id)) throw new Error(`unexpected id ${id}`);
  return id;
};

/** Starts the case's runners, submits the prediction, waits for COMPLETED and stops the runners. */
async function predict(
  stack: LocalStack,
  http: Http,
  image: { id: string; side: number },
  label: CaseResult["label"] | "zeros",
  runnerCount: number,
): Promise<{ record: Prediction; wallMs: number }> {
  const runners = await startRunners(stack, `${image.side}-${label}`, runnerCount);
  try {
    const submitted = performance.now();
    const id = await submit(http, image.id);
    const record = await untilDone(http, id, `${image.side}² ${label}`);
    return { record, wallMs: performance.now() - submitted };
  } finally {
    await stopRunners(runners);
  }
}

/**
 * The PNG of zeros with one runner. A PNG is one stream, not read by ranges, so its blocks run
 * inside the prediction's own job, not as block tasks: the figures are the wall time and the
 * segmentation's own timings.
 */
async function runZerosCase(stack: LocalStack, http: Http, image: { id: string; side: number }): Promise<void> {
  const { record, wallMs } = await predict(stack, http, image, "zeros", 1);
  const segmentation = await http.json<SegmentationRecord>("GET", `/segmentation/${record.segmentation_id}`);
  const [job] = stack.sql(`SELECT started_at, finished_at FROM jobs WHERE id = '${hexId(record.prediction_id)}'`) as {
    started_at: number;
    finished_at: number;
  }[];
  console.log(
    `${image.side}² PNG of zeros, 1 runner: submit to COMPLETED ${seconds(wallMs)} s (target: seconds); the prediction's own started to finished ${seconds(job!.finished_at - job!.started_at)} s; ${int(record.cell_count ?? 0)} cells`,
  );
  console.log(`  the segmentation's timings: ${JSON.stringify(segmentation.timings)}`);
}

async function runCase(
  stack: LocalStack,
  http: Http,
  image: { id: string; file: string; truth: number; side: number; glass: number },
  label: CaseResult["label"],
  runnerCount: number,
): Promise<CaseResult> {
  const { record, wallMs } = await predict(stack, http, image, label, runnerCount);
  const segmentation = await http.json<SegmentationRecord>("GET", `/segmentation/${record.segmentation_id}`);
  const timings = segmentation.timings;
  const [job] = stack.sql(`SELECT created_at, started_at, finished_at FROM jobs WHERE id = '${hexId(record.prediction_id)}'`) as {
    created_at: number;
    started_at: number;
    finished_at: number;
  }[];
  const blocks = stack.sql(
    `SELECT block_index, lease_holder, attempts, created_at, started_at, finished_at, result FROM jobs WHERE parent_job_id = '${hexId(record.prediction_id)}' ORDER BY block_index`,
  ) as unknown as BlockRow[];
  if (blocks.length === 0) throw new Error(`prediction ${record.prediction_id} has no block tasks: it was not fanned out`);
  const stageMs: Record<string, number> = {};
  let readBytes = 0;
  let glassBlocks = 0;
  const byRunner: Record<string, BlockRow[]> = {};
  for (const block of blocks) {
    const stored: unknown = block.result ?? {};
    const result = (typeof stored === "string" ? JSON.parse(stored) : stored) as { glass?: boolean; timings?: Record<string, number> };
    if (result.glass) glassBlocks++;
    for (const [key, value] of Object.entries(result.timings ?? {})) {
      if (key === "read_bytes") readBytes += value;
      else if (key.endsWith("_ms")) stageMs[key.slice(0, -3)] = (stageMs[key.slice(0, -3)] ?? 0) + value;
    }
    (byRunner[block.lease_holder ?? "?"] ??= []).push(block);
  }
  const stageSum = Object.values(stageMs).reduce((a, b) => a + b, 0);
  const spans = blocks.reduce((sum, b) => sum + (b.finished_at! - b.started_at!), 0);
  let gaps = 0;
  for (const own of Object.values(byRunner)) {
    own.sort((x, y) => x.started_at! - y.started_at!);
    for (let i = 1; i < own.length; i++) gaps += own[i]!.started_at! - own[i - 1]!.finished_at!;
  }
  const queuedAt = Math.min(...blocks.map((b) => b.created_at));
  const firstLease = Math.min(...blocks.map((b) => b.started_at!));
  const lastDone = Math.max(...blocks.map((b) => b.finished_at!));
  const timing = (key: string) => (typeof timings?.[key] === "number" ? (timings[key] as number) : null);
  const result: CaseResult = {
    side: image.side,
    label,
    runners: runnerCount,
    glass_fraction: image.glass,
    file: image.file,
    file_bytes: statSync(image.file).size,
    truth: image.truth,
    image_id: image.id,
    prediction_id: record.prediction_id,
    segmentation_id: record.segmentation_id!,
    cells: record.cell_count!,
    wall_ms: Math.round(wallMs),
    queued_ms: job!.started_at - job!.created_at,
    started_to_finished_ms: job!.finished_at - job!.started_at,
    started_at: record.started_at,
    finished_at: record.finished_at,
    blocks: blocks.length,
    glass_blocks: glassBlocks,
    plan_ms: queuedAt - job!.started_at,
    first_block_wait_ms: firstLease - queuedAt,
    blocks_ms: lastDone - firstLease,
    merge_phase_ms: job!.finished_at - lastDone,
    merge_ms: timing("merge_ms"),
    merge_attempt_total_ms: timing("total_ms"),
    block_stage_ms: Object.fromEntries(Object.entries(stageMs).map(([k, v]) => [k, Math.round(v)])),
    block_stage_sum_ms: Math.round(stageSum),
    block_spans_ms: spans,
    gaps_between_blocks_ms: gaps,
    per_block_overhead_ms: Math.round((wallMs * runnerCount - stageSum) / blocks.length),
    in_block_overhead_ms: Math.round((spans - stageSum) / blocks.length),
    runner_utilisation: spans / (wallMs * runnerCount),
    blocks_by_runner: Object.fromEntries(Object.entries(byRunner).map(([holder, own]) => [holder, own.length])),
    block_attempts: blocks.reduce((sum, b) => sum + b.attempts, 0),
    read_bytes: readBytes || timing("read_bytes"),
    timings,
  };
  printCase(result);
  return result;
}

function caseName(c: CaseResult): string {
  if (c.label === "glass") return `${Math.round(c.glass_fraction * 100)} % glass, 1 runner`;
  return `(${c.label}) ${c.runners} runner${c.runners > 1 ? "s" : ""} of 1 thread`;
}

function printCase(r: CaseResult) {
  const what = caseName(r);
  console.log(
    `${r.side}² ${what}: submit to COMPLETED ${seconds(r.wall_ms)} s; the prediction's own started to finished ${seconds(r.started_to_finished_ms)} s` +
      ` (queued ${seconds(r.queued_ms)} s); ${int(r.cells)} cells of ${int(r.truth)} true`,
  );
  console.log(
    `  blocks ${r.blocks} (${r.glass_blocks} glass): plan ${seconds(r.plan_ms)} s, first block leased ${seconds(r.first_block_wait_ms)} s later,` +
      ` blocks ${seconds(r.blocks_ms)} s, last block to COMPLETED ${seconds(r.merge_phase_ms)} s (merge_ms ${r.merge_ms ?? "?"}, merge attempt ${r.merge_attempt_total_ms ?? "?"} ms)`,
  );
  const stages = Object.entries(r.block_stage_ms)
    .filter(([, ms]) => ms > 0)
    .map(([stage, ms]) => `${stage} ${seconds(ms)}`)
    .join(", ");
  console.log(`  stages summed over the blocks (s): ${stages}; in all ${seconds(r.block_stage_sum_ms)} s`);
  console.log(
    `  block tasks' spans ${seconds(r.block_spans_ms)} s (${int(r.in_block_overhead_ms)} ms a block around the stages), gaps between a runner's blocks ${seconds(r.gaps_between_blocks_ms)} s;` +
      ` runners busy ${(100 * r.runner_utilisation).toFixed(0)} % of the wall`,
  );
  console.log(
    `  per-block overhead (wall${r.runners > 1 ? ` x ${r.runners}` : ""} - stage sums) / blocks: ${int(r.per_block_overhead_ms)} ms; blocks by runner: ${Object.entries(
      r.blocks_by_runner,
    )
      .map(([holder, n]) => `${holder} ${n}`)
      .join(", ")}; ${r.block_attempts} block attempts; read ${r.read_bytes === null ? "?" : mib(r.read_bytes)} of a ${mib(r.file_bytes)} file`,
  );
}

/** Line hashes (the ids of the segmentation and its image replaced) and their counts. */
async function lineCounts(path: string, ids: CaseResult): Promise<{ counts: Map<string, number>; lines: number }> {
  const counts = new Map<string, number>();
  let lines = 0;
  for await (const line of createInterface({ input: createReadStream(path, { encoding: "utf8" }), crlfDelay: Number.POSITIVE_INFINITY })) {
    const key = createHash("sha1").update(line.replaceAll(ids.segmentation_id, "<segmentation>").replaceAll(ids.image_id, "<image>")).digest("base64");
    counts.set(key, (counts.get(key) ?? 0) + 1);
    lines++;
  }
  return { counts, lines };
}

/** Downloads both segmentations' exports and compares them as text. */
async function compareExports(http: Http, a: CaseResult, b: CaseResult): Promise<SideResult["differing"]> {
  const differing: SideResult["differing"] = {};
  for (const format of FORMATS) {
    const files: string[] = [];
    for (const r of [a, b]) {
      const dir = join(exportsDir, `${r.side}-${r.label}`);
      mkdirSync(dir, { recursive: true });
      files.push(await downloadExport(http, r.segmentation_id, exportFile(format, r.cells), dir, { columns: [] }, format));
    }
    const left = await lineCounts(files[0]!, a);
    const right = await lineCounts(files[1]!, b);
    let onlyB = 0;
    for (const [key, n] of right.counts) {
      const inA = left.counts.get(key) ?? 0;
      if (n > inA) onlyB += n - inA;
      left.counts.set(key, Math.max(0, inA - n));
    }
    const onlyA = [...left.counts.values()].reduce((sum, n) => sum + n, 0);
    differing[format] = { only_a: onlyA, only_b: onlyB, lines_a: left.lines, lines_b: right.lines };
  }
  return differing;
}

function cellsVerdict(differing: SideResult["differing"]): string {
  const parts = Object.entries(differing).filter(([, d]) => d.only_a + d.only_b > 0);
  if (parts.length === 0) return "same cells";
  return parts
    .map(([format, d]) => `${format}: ${int(d.only_a)} lines only in (a), ${int(d.only_b)} only in (b), of ${int(d.lines_a)} and ${int(d.lines_b)}`)
    .join("; ");
}

async function main() {
  console.log(
    `bench:fanout on ${cpus().length} cores (load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}); sides ${sides.join(", ")}; glass ${glassFraction > 0 ? `${glassFraction} at ${glassSide}²` : "none"};` +
      ` single-pass ${(singlePassPixels / 1e6).toFixed(2)} MP; block memory ${runnerEnv.BLOCK_MEMORY_MB ?? process.env.BLOCK_MEMORY_MB ?? "default"} MB; work dir ${work}`,
  );
  const images = [];
  for (const side of sides) images.push({ side, glass: 0, ...(await mosaicFile(side, 0)) });
  const glassImage = glassFraction > 0 ? { side: glassSide, glass: glassFraction, ...(await mosaicFile(glassSide, glassFraction)) } : null;
  const zerosImage = zerosSide === undefined ? null : { side: zerosSide, file: await zerosPngFile(zerosSide) };

  const cases: CaseResult[] = [];
  const perSide: SideResult[] = [];
  let ceiling: Ceiling | undefined;
  const stack = await startStack({ leaseSeconds: 60 });
  try {
    const http = connect({ api: stack.api, key: stack.key }, { log: (m) => console.log(`  retrying: ${m}`) });
    const upload = async (file: string) => {
      const started = performance.now();
      const record = await uploadImage(
        http,
        { path: file, name: basename(file), size: statSync(file).size },
        { resumableAbove: DEFAULT_RESUMABLE_ABOVE, bodyLimit: CLOUDFLARE_BODY_LIMIT },
      );
      console.log(`uploaded ${basename(file)} as ${record.id} in ${seconds(performance.now() - started)} s`);
      return record.id;
    };
    for (const image of images) {
      // What two one-thread processes gain over one on this machine, measured beside the cases.
      if (ceiling === undefined && !values["no-ceiling"] && !values["one-runner-only"]) {
        ceiling = await parallelCeiling();
        console.log(
          `the machine's ceiling: one engine process of one thread ${seconds(ceiling.aloneMs)} s, two side by side ${ceiling.togetherMs.map(seconds).join(" s and ")} s: ${ceiling.speedUp.toFixed(2)}x`,
        );
      }
      const a = await runCase(stack, http, { id: await upload(image.file), ...image }, "a", 1);
      if (values["one-runner-only"]) {
        cases.push(a);
        continue;
      }
      const b = await runCase(stack, http, { id: await upload(image.file), ...image }, "b", 2);
      cases.push(a, b);
      const differing = await compareExports(http, a, b);
      const side: SideResult = {
        side: image.side,
        speed_up: a.wall_ms / b.wall_ms,
        speed_up_own_times: a.started_to_finished_ms / b.started_to_finished_ms,
        stage_sums_b_over_a: b.block_stage_sum_ms / a.block_stage_sum_ms,
        same_cells: Object.values(differing).every((d) => d.only_a + d.only_b === 0),
        differing,
      };
      perSide.push(side);
      console.log(
        `${image.side}²: speed-up (a)/(b) ${side.speed_up.toFixed(2)}x submit to COMPLETED, ${side.speed_up_own_times.toFixed(2)}x by the predictions' own times` +
          ` (target >= 1.6x${ceiling ? `; this machine's ceiling ${ceiling.speedUp.toFixed(2)}x, of which the fan-out reached ${Math.round((100 * (side.speed_up - 1)) / (ceiling.speedUp - 1))} %` : ""})` +
          `; the blocks' summed stage times ${side.stage_sums_b_over_a.toFixed(2)}x (a)'s; cells ${int(a.cells)} and ${int(b.cells)}: ${cellsVerdict(differing)}`,
      );
    }
    if (glassImage) {
      const g = await runCase(stack, http, { id: await upload(glassImage.file), ...glassImage }, "glass", 1);
      cases.push(g);
      const full = cases.find((c) => c.side === glassSide && c.label === "a")!;
      console.log(
        `${glassSide}² with ${Math.round(glassFraction * 100)} % glass: ${seconds(g.wall_ms)} s = ${(g.wall_ms / full.wall_ms).toFixed(2)} of the full mosaic's` +
          ` ${seconds(full.wall_ms)} s with 1 runner (target < 0.40); ${g.glass_blocks} of ${g.blocks} blocks glass`,
      );
    }
    if (zerosImage) await runZerosCase(stack, http, { id: await upload(zerosImage.file), side: zerosImage.side });
  } finally {
    await stack.stop();
    if (!values.keep) rmSync(exportsDir, { recursive: true, force: true });
  }

  // The summary.
  const rows = [
    ["side", "case", "wall s", "own s", "cells", "blocks (glass)", "plan s", "merge ms", "overhead ms/block", "against (a)"],
    ...cases.map((c) => {
      const full = cases.find((x) => x.side === c.side && x.label === "a");
      const side = perSide.find((s) => s.side === c.side);
      const versus =
        c.label === "b"
          ? `speed-up ${side!.speed_up.toFixed(2)}x, ${side!.same_cells ? "same cells" : "cells differ"}`
          : c.label === "glass" && full
            ? `${(c.wall_ms / full.wall_ms).toFixed(2)} of the time`
            : "-";
      return [
        `${c.side}²`,
        caseName(c),
        seconds(c.wall_ms),
        seconds(c.started_to_finished_ms),
        int(c.cells),
        `${c.blocks} (${c.glass_blocks})`,
        seconds(c.plan_ms),
        String(c.merge_ms ?? "?"),
        int(c.per_block_overhead_ms),
        versus,
      ];
    }),
  ];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  if (cases.length > 0) {
    console.log("\nsummary (1 thread a runner)");
    for (const row of rows) console.log(`  ${row.map((cell, i) => cell.padEnd(widths[i]!)).join("  ")}`);
  }
  const out = join(work, "fanout-results.json");
  writeFileSync(
    out,
    `${JSON.stringify(
      {
        date: new Date().toISOString(),
        cores: cpus().length,
        load_average: loadavg(),
        single_pass_mp: singlePassPixels / 1e6,
        block_memory_mb: runnerEnv.BLOCK_MEMORY_MB ?? process.env.BLOCK_MEMORY_MB ?? null,
        model: MODEL,
        params: PARAMS,
        ceiling: ceiling ?? null,
        sides: perSide,
        cases,
      },
      null,
      2,
    )}\n`,
  );
  console.log(`results: ${out}${values.keep ? `; exports in ${exportsDir}` : ""}; runner logs in ${logs}`);
}

await main();
