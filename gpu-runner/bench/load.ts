// npm run bench:load -- [--orgs 3] [--clients 2] [--seconds 40] [--settle 180] [--storage-cap 40] [--analysis-cap 20]
// Load on the local stack: organizations (made through the admin CLI's path into the running
// worker, each with its own key and small caps) x concurrent clients, for a bounded time, doing
// uploads in both forms, predictions, polls, listings and the four exports. Prints requests/s,
// p50/p99 latency per route kind and responses by status, then checks that nothing was lost or
// broken; exits 1 when a check fails. Traffic goes only to the stack on 127.0.0.1.
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { parseArgs } from "node:util";
import { encode as encodePng } from "fast-png";
import { operatorBackend } from "../../scripts/admin-backends.ts";
import { startStack, type LocalStack } from "../../scripts/local-stack.ts";
import { runningStack } from "../../scripts/running-stack.ts";
import { syntheticNuclei } from "../../test/e2e/stack.ts";
import { SeededRandom } from "../training/random.ts";

const { values: flags } = parseArgs({
  options: {
    orgs: { type: "string", default: "3" },
    clients: { type: "string", default: "2" },
    seconds: { type: "string", default: "40" },
    settle: { type: "string", default: "180" },
    "storage-cap": { type: "string", default: "40" },
    "analysis-cap": { type: "string", default: "20" },
  },
});
const positive = (name: keyof typeof flags) => {
  const n = Number(flags[name]);
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`--${name} must be a whole number >= 1`);
  return n;
};
const ORGS = positive("orgs");
const CLIENTS = positive("clients");
const SECONDS = positive("seconds");
const SETTLE_SECONDS = positive("settle");
/** Each organization's caps: small, so that both caps' 402s are part of the load and their holding is checked. */
const STORAGE_CAP = positive("storage-cap");
const ANALYSIS_CAP = positive("analysis-cap");
/** Each client stops after this many operations even if time remains. */
const MAX_OPS_PER_CLIENT = 2_000;
const REQUEST_TIMEOUT_MS = 60_000;

// ---- measuring -------------------------------------------------------------------------------

interface Sample {
  kind: string;
  status: number; // 0: no answer (connection error or timeout)
  ms: number;
}
const samples: Sample[] = [];
/** The results, printed once the stack (whose processes log to the same terminal) has stopped. */
const results: string[] = [];
const say = (line: string) => results.push(line);
/** Answers the load expects: a predict while one runs (400), a cap reached (402). */
const expected = (kind: string, status: number) => (kind === "predict submit" && (status === 400 || status === 402)) || (kind === "upload create" && status === 402) || (kind === "upload multipart" && status === 402);

async function timed(kind: string, url: string, init: RequestInit = {}): Promise<{ status: number; body: unknown }> {
  const start = performance.now();
  try {
    const response = await fetch(url, { ...init, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    const type = response.headers.get("Content-Type") ?? "";
    const body = type.includes("json") && !url.includes("/export/") ? await response.json().catch(() => null) : await response.arrayBuffer();
    samples.push({ kind, status: response.status, ms: performance.now() - start });
    return { status: response.status, body };
  } catch (error) {
    samples.push({ kind, status: 0, ms: performance.now() - start });
    return { status: 0, body: String(error) };
  }
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

function report(seconds: number): void {
  const kinds = [...new Set(samples.map((s) => s.kind))].sort();
  say(`${samples.length} requests in ${seconds.toFixed(1)} s = ${(samples.length / seconds).toFixed(1)} requests/s`);
  say("route kind                 count   p50 ms   p99 ms   statuses");
  for (const kind of kinds) {
    const of = samples.filter((s) => s.kind === kind);
    const ms = of.map((s) => s.ms).sort((a, b) => a - b);
    const statuses = countBy(of.map((s) => s.status));
    say(`${kind.padEnd(25)} ${String(of.length).padStart(6)} ${percentile(ms, 50).toFixed(0).padStart(8)} ${percentile(ms, 99).toFixed(0).padStart(8)}   ${statuses}`);
  }
  say(`responses by status: ${countBy(samples.map((s) => s.status))}`);
}

function countBy(xs: number[]): string {
  const counts = new Map<number, number>();
  for (const x of xs) counts.set(x, (counts.get(x) ?? 0) + 1);
  return [...counts].sort(([a], [b]) => a - b).map(([k, n]) => `${k === 0 ? "no answer" : k}: ${n}`).join(", ");
}

// ---- the load ----------------------------------------------------------------------------------

interface Org {
  slug: string;
  key: string;
  /** Every image record this org's clients created, and whether its bytes were a valid image. */
  uploads: Map<string, { valid: boolean }>;
  readyImages: string[];
  predictions: Set<string>;
  segmentations: string[];
}

const SIZE = 96;
const validPng = encodePng({ width: SIZE, height: SIZE, data: syntheticNuclei(SIZE, SIZE, 32, 9).data, depth: 16, channels: 1 }) as Uint8Array<ArrayBuffer>;
/** Noise does not compress: a 16-bit PNG of it above the 8 MiB part size travels as two parts. */
const twoPartPng = (() => {
  const random = new SeededRandom(1);
  const data = new Uint16Array(2048 * 2100).map(() => random.below(65_536));
  return encodePng({ width: 2048, height: 2100, data, depth: 16, channels: 1 }) as Uint8Array<ArrayBuffer>;
})();
/** How many parts each resumable upload's plan had. */
const partCounts: number[] = [];
/** Not an image: its conversion must end `failed` with a reason, not stay processing. */
const garbage = new Uint8Array(4096).map((_, i) => (i * 7919) % 251);

function client(stack: LocalStack, org: Org, index: number, until: number) {
  const auth = { Authorization: `Bearer ${org.key}` };
  const api = (kind: string, path: string, init: RequestInit = {}) => timed(kind, stack.api + path, { ...init, headers: { ...auth, ...init.headers } });
  const json = (body: unknown) => ({ method: "POST", body: JSON.stringify(body), headers: { "Content-Type": "application/json" } });
  let lastPrediction: string | undefined;
  let listings = 0;
  let resumables = index;

  const actions: (() => Promise<void>)[] = [
    async function multipartUpload() {
      const form = new FormData();
      form.append("file", new File([validPng], `load-${index}.png`));
      const { status, body } = await api("upload multipart", "/upload", { method: "POST", body: form });
      if (status !== 200 && status !== 201) return;
      const id = (body as { image: { id: string } }).image.id;
      org.uploads.set(id, { valid: true });
      org.readyImages.push(id);
    },
    async function resumableUpload() {
      // Of every four resumable uploads one carries bytes that are not an image and one is two parts.
      const turn = resumables++ % 4;
      const valid = turn !== 2;
      const bytes = turn === 2 ? garbage : turn === 3 ? twoPartPng : validPng;
      const { status, body } = await api("upload create", "/upload", json({ name: `load-${index}.png`, size: bytes.length }));
      if (status !== 200 && status !== 201) return;
      const plan = body as { image: { id: string }; upload: { part_size: number; urls: { url: string }[] } };
      org.uploads.set(plan.image.id, { valid });
      partCounts.push(plan.upload.urls.length);
      for (const [i, { url }] of plan.upload.urls.entries()) {
        const part = bytes.subarray(i * plan.upload.part_size, (i + 1) * plan.upload.part_size);
        await timed("upload part PUT", url, { method: "PUT", body: part });
      }
      await api("upload complete", `/upload/${plan.image.id}/complete`, { method: "POST" });
    },
    async function predict() {
      const image = org.readyImages.at(-1 - (index % Math.max(1, org.readyImages.length)));
      if (!image) return;
      const { status, body } = await api("predict submit", "/predict", json({ image_id: image, model_id: "cpsam" }));
      if (status === 200 || status === 201 || status === 202) {
        lastPrediction = (body as { prediction_id: string }).prediction_id;
        org.predictions.add(lastPrediction);
      }
    },
    async function poll() {
      if (!lastPrediction) return;
      const { body } = await api("predict poll", `/predict/${lastPrediction}`);
      const p = body as { status?: string; segmentation_id?: string };
      if (p.status === "COMPLETED" && p.segmentation_id && !org.segmentations.includes(p.segmentation_id)) org.segmentations.push(p.segmentation_id);
    },
    async function list() {
      const paths = ["/images", "/predictions", "/segmentations", "/jobs", "/models"];
      const path = paths[(index + listings++) % paths.length];
      await api(`list ${path.slice(1)}`, `${path}?limit=20`);
    },
    async function exportAll() {
      const segmentation = org.segmentations.at(-1);
      if (!segmentation) return;
      for (const file of ["measurements.csv", "rois.geojson", "rois.zip", "masks.png"]) await api(`export ${file}`, `/export/${segmentation}/${file}`);
    },
  ];

  return (async () => {
    for (let op = 0; op < MAX_OPS_PER_CLIENT && Date.now() < until; op++) await actions[(op + index) % actions.length]();
  })();
}

/** Samples each org's predictions: one-at-a-time means never two SUBMITTED/STARTED at once. */
function sampleOneAtATime(stack: LocalStack, orgs: Org[], running: () => boolean) {
  const violations: string[] = [];
  let samplesTaken = 0;
  const done = (async () => {
    while (running()) {
      for (const org of orgs) {
        const { status, body } = await timed("sample predictions", `${stack.api}/predictions?limit=50`, { headers: { Authorization: `Bearer ${org.key}` } });
        if (status !== 200) continue;
        samplesTaken++;
        const items = (body as { items: { prediction_id: string; status: string }[] }).items;
        const active = items.filter((p) => p.status === "SUBMITTED" || p.status === "STARTED");
        if (active.length > 1) violations.push(`${org.slug}: ${active.map((p) => `${p.prediction_id} ${p.status}`).join(", ")}`);
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  })();
  return { violations, done, taken: () => samplesTaken };
}

// ---- the checks ---------------------------------------------------------------------------------

/** Polls every upload and prediction until none is in progress or the settle time is up. */
async function settle(stack: LocalStack, orgs: Org[]): Promise<{ uploadProblems: string[]; predictionProblems: string[] }> {
  const deadline = Date.now() + SETTLE_SECONDS * 1000;
  const get = (org: Org, path: string) => timed("settle poll", stack.api + path, { headers: { Authorization: `Bearer ${org.key}` } });
  for (;;) {
    const stuckUploads: string[] = [];
    const unfinished: string[] = [];
    const badUploads: string[] = [];
    const badPredictions: string[] = [];
    for (const org of orgs) {
      for (const [id, { valid }] of org.uploads) {
        const image = (await get(org, `/upload/${id}`)).body as { upload_status?: string; upload_error?: string | null };
        if (image.upload_status === "ready" && !valid) badUploads.push(`${id}: not an image, yet ready`);
        else if (image.upload_status === "failed" && (valid || !image.upload_error)) badUploads.push(`${id}: failed (${image.upload_error ?? "no reason"})`);
        else if (image.upload_status !== "ready" && image.upload_status !== "failed") stuckUploads.push(`${id}: ${image.upload_status}`);
      }
      for (const id of org.predictions) {
        const p = (await get(org, `/predict/${id}`)).body as { status?: string; reason?: string | null; segmentation_id?: string };
        if (p.status === "FAILED" && !p.reason) badPredictions.push(`${id}: FAILED with no reason`);
        else if (p.status === "FAILED") badPredictions.push(`${id}: FAILED (${p.reason}); a valid image should segment`);
        else if (p.status === "COMPLETED" && !p.segmentation_id) badPredictions.push(`${id}: COMPLETED with no segmentation`);
        else if (p.status !== "COMPLETED") unfinished.push(`${id}: ${p.status}`);
      }
    }
    if ((stuckUploads.length === 0 && unfinished.length === 0) || Date.now() > deadline) return { uploadProblems: [...stuckUploads, ...badUploads], predictionProblems: [...unfinished, ...badPredictions] };
    await new Promise((r) => setTimeout(r, 2000));
  }
}

// The Worker's own signing code. Its module types its env with Workers types, which the Node
// typecheck does not load, so it is imported by a computed specifier (Node runs it as is).
type SignStorageUrl = (env: { SIGNED_URL_MODE: "worker"; SIGNING_KEY: string }, origin: string, target: { method: "GET"; key: string }) => Promise<string>;
const signedUrlsModule = "../../worker/services/signed-urls.ts";

/**
 * Every key in the local R2 bucket, read from the index miniflare keeps of the bucket's objects
 * (a SQLite file per bucket under the state directory), opened read-only after the load.
 */
function localR2Keys(state: string): Set<string> {
  const dir = join(state, "v3", "r2", "miniflare-R2BucketObject");
  const keys = new Set<string>();
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".sqlite"))) {
    const db = new DatabaseSync(join(dir, file), { readOnly: true });
    try {
      // Other files there belong to miniflare's own bookkeeping, without the objects table.
      if (!db.prepare("SELECT 1 FROM sqlite_master WHERE name = '_mf_objects'").get()) continue;
      for (const row of db.prepare("SELECT key FROM _mf_objects").all()) keys.add(String(row.key));
    } finally {
      db.close();
    }
  }
  return keys;
}

/**
 * Every ready image's bytes are in R2 at its size; every segmentation's artifact is there; and
 * nothing under an image or segmentation prefix in R2 lacks its row (no orphaned bytes).
 */
async function storageMatchesR2(stack: LocalStack): Promise<{ checked: number; mismatches: string[] }> {
  const { signStorageUrl } = (await import(signedUrlsModule)) as { signStorageUrl: SignStorageUrl };
  const origin = new URL(stack.api).origin;
  const head = async (key: string) => {
    const url = await signStorageUrl({ SIGNED_URL_MODE: "worker", SIGNING_KEY: stack.signingKey }, origin, { method: "GET", key });
    const response = await fetch(url, { method: "HEAD", signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    return response.ok ? Number(response.headers.get("Content-Length")) : null;
  };
  const mismatches: string[] = [];
  const images = stack.sql("SELECT id, r2_key, size FROM images WHERE status = 'ready'") as { id: string; r2_key: string; size: number }[];
  for (const image of images) {
    const size = await head(image.r2_key);
    if (size !== image.size) mismatches.push(`image ${image.id}: D1 says ${image.size} bytes, R2 holds ${size ?? "nothing"}`);
  }
  const artifacts = stack.sql("SELECT id, artifact_key FROM segmentations") as { id: string; artifact_key: string }[];
  for (const s of artifacts) if ((await head(s.artifact_key)) === null) mismatches.push(`segmentation ${s.id}: artifact ${s.artifact_key} missing from R2`);
  const imageKeys = new Set((stack.sql("SELECT r2_key FROM images") as { r2_key: string }[]).map((r) => r.r2_key));
  const artifactPrefixes = new Set(artifacts.map((s) => s.artifact_key.slice(0, s.artifact_key.lastIndexOf("/") + 1)));
  const r2 = localR2Keys(stack.state);
  for (const key of r2) {
    if (/^orgs\/[^/]+\/images\//.test(key) && !imageKeys.has(key)) mismatches.push(`R2 object ${key} has no image row`);
    if (/^orgs\/[^/]+\/segmentations\//.test(key) && !artifactPrefixes.has(key.slice(0, key.lastIndexOf("/") + 1))) mismatches.push(`R2 object ${key} has no segmentation row`);
  }
  return { checked: r2.size, mismatches };
}

// ---- main -----------------------------------------------------------------------------------------

async function main(): Promise<number> {
  const stack = await startStack();
  stack.startRunner({ RUNNER_ID: "load", RUNNER_CONCURRENCY: "2" });
  try {
    const backend = operatorBackend(runningStack({ persistTo: stack.state })!);
    const orgs: Org[] = [];
    for (let i = 0; i < ORGS; i++) {
      const slug = `load-${i}`;
      await backend.createOrganization(slug, { plan: "free", storageCap: STORAGE_CAP, analysisCap: ANALYSIS_CAP });
      const { key } = await backend.createKey(slug);
      orgs.push({ slug, key, uploads: new Map(), readyImages: [], predictions: new Set(), segmentations: [] });
    }
    say(`load: ${ORGS} organizations x ${CLIENTS} clients for ${SECONDS} s (storage cap ${STORAGE_CAP}, analysis cap ${ANALYSIS_CAP}); one runner, concurrency 2`);

    const start = performance.now();
    const until = Date.now() + SECONDS * 1000;
    let loading = true;
    const sampler = sampleOneAtATime(stack, orgs, () => loading);
    await Promise.all(orgs.flatMap((org) => Array.from({ length: CLIENTS }, (_, i) => client(stack, org, i, until))));
    loading = false;
    await sampler.done;
    const loadSeconds = (performance.now() - start) / 1000;
    const loadSamples = samples.length;
    report(loadSeconds);

    const settleStart = performance.now();
    const { uploadProblems, predictionProblems } = await settle(stack, orgs);
    say(`resumable uploads by part count: ${countBy(partCounts)}`);
    say(`settled in ${((performance.now() - settleStart) / 1000).toFixed(1)} s`);
    const caps = stack.sql(
      "SELECT o.slug, (SELECT count(*) FROM images i WHERE i.org_id = o.id) AS images, " +
        "(SELECT count(*) FROM jobs j WHERE j.org_id = o.id AND j.kind IN ('prediction', 'training')) AS analyses FROM organizations o WHERE o.slug LIKE 'load-%'",
    ) as { slug: string; images: number; analyses: number }[];
    const openJobs = stack.sql("SELECT id, kind, status FROM jobs WHERE status IN ('SUBMITTED', 'STARTED')") as { id: string; kind: string; status: string }[];
    const storage = await storageMatchesR2(stack);

    const load = samples.slice(0, loadSamples);
    const serverErrors = samples.filter((s) => s.status >= 500);
    const unanswered = samples.filter((s) => s.status === 0);
    const unexpected = load.filter((s) => s.status >= 400 && s.status < 500 && !expected(s.kind, s.status));
    const uploads = orgs.reduce((n, o) => n + o.uploads.size, 0);
    const predictions = orgs.reduce((n, o) => n + o.predictions.size, 0);
    const refused = (status: number, kinds: string[]) => load.filter((s) => s.status === status && kinds.includes(s.kind)).length;
    say(
      `expected refusals: ${refused(400, ["predict submit"])} predict 400 (one at a time), ` +
        `${refused(402, ["upload create", "upload multipart"])} upload 402 (storage cap), ${refused(402, ["predict submit"])} predict 402 (analysis cap)`,
    );

    const checks: [string, string[]][] = [
      ["no 5xx", serverErrors.map((s) => `${s.kind}: ${s.status}`)],
      ["every request answered", unanswered.map((s) => `${s.kind} after ${s.ms.toFixed(0)} ms`)],
      ["no unexpected 4xx", unexpected.map((s) => `${s.kind}: ${s.status}`)],
      [`every upload (${uploads}) ready or failed with a reason, as its bytes deserve`, uploadProblems],
      [`every prediction (${predictions}) ended COMPLETED with its segmentation (a FAILED one is listed with its reason)`, predictionProblems],
      ["no job left SUBMITTED or STARTED", openJobs.map((j) => `${j.kind} ${j.id}: ${j.status}`)],
      [`one prediction at a time per organization (${sampler.taken()} samples)`, sampler.violations],
      [
        "caps held",
        caps.flatMap((c) => [
          ...(c.images > STORAGE_CAP ? [`${c.slug}: ${c.images} images > ${STORAGE_CAP}`] : []),
          ...(c.analyses > ANALYSIS_CAP ? [`${c.slug}: ${c.analyses} analyses > ${ANALYSIS_CAP}`] : []),
        ]),
      ],
      [`storage rows match R2 (${storage.checked} objects in the bucket)`, storage.mismatches],
    ];
    let failed = 0;
    for (const [name, problems] of checks) {
      say(`${problems.length === 0 ? "ok  " : "FAIL"} ${name}${problems.length ? `: ${problems.length}` : ""}`);
      for (const p of problems.slice(0, 5)) say(`       ${p}`);
      if (problems.length) failed++;
    }
    return failed;
  } finally {
    await stack.stop();
  }
}

try {
  process.exitCode = (await main()) === 0 ? 0 : 1;
} finally {
  console.log(`\n${results.join("\n")}`);
}
