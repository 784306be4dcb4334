// npm run bench:load -- [--orgs 3] [--clients 2] [--seconds 30] [--settle 180] [--storage-cap 40] [--analysis-cap 20]
// npm run bench:load -- --faults: the fault tests instead (test/faults/), each on the local stack.
// npm run bench:load -- --hostile-neighbour [--seconds 60]: one organization's predictions alone,
// then beside another that sends crafted files (load-hostile.ts).
// Load on the local stack: organizations (made through the admin CLI's path into the running
// worker, each with its own key and small caps) x concurrent clients, for a bounded time, doing
// uploads in both forms, predictions, polls, listings and the four exports. Prints requests/s,
// p50/p99 latency per route kind and responses by status, then checks that nothing was lost or
// broken; exits 1 when a check fails. Traffic goes only to the stack on 127.0.0.1.
import { spawnSync } from "node:child_process";
import { parseArgs } from "node:util";
import { operatorBackend } from "../scripts/admin-backends.ts";
import { startStack } from "../scripts/local-stack.ts";
import { runningStack } from "../scripts/running-stack.ts";
import { settle, storageMatchesR2 } from "./load-checks.ts";
import { client, type Org, partCounts, sampleOneAtATime } from "./load-clients.ts";
import { hostileNeighbour } from "./load-hostile.ts";
import { countBy, report, samples } from "./load-requests.ts";

const { values: flags } = parseArgs({
  options: {
    orgs: { type: "string", default: "3" },
    clients: { type: "string", default: "2" },
    seconds: { type: "string", default: "30" },
    settle: { type: "string", default: "180" },
    "storage-cap": { type: "string", default: "40" },
    "analysis-cap": { type: "string", default: "20" },
    faults: { type: "boolean", default: false },
    "hostile-neighbour": { type: "boolean", default: false },
  },
});

if (flags.faults) {
  // workerd killed during conversions, a runner killed during a training, a worker gone for 30 s:
  // vitest prints each check by name and what each fault interrupted.
  const vitest = spawnSync(process.execPath, ["node_modules/vitest/vitest.mjs", "run", "--project", "faults"], {
    stdio: "inherit",
    env: { ...process.env, CELLSEG_FAULT_TESTS: "1" },
  });
  process.exit(vitest.status ?? 1);
}
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

/** The results, printed once the stack (whose processes log to the same terminal) has stopped. */
const results: string[] = [];
const say = (line: string) => results.push(line);
/** Answers the load expects: a predict while one runs (400), a cap reached (402). */
const expected = (kind: string, status: number) =>
  (kind === "predict submit" && (status === 400 || status === 402)) ||
  (kind === "upload create" && status === 402) ||
  (kind === "upload multipart" && status === 402);

async function main(): Promise<number> {
  const stack = await startStack();
  stack.startRunner({ RUNNER_ID: "load", RUNNER_CONCURRENCY: "2" });
  try {
    const backend = operatorBackend(runningStack({ persistTo: stack.state })!);
    if (flags["hostile-neighbour"]) {
      const { lines, failed } = await hostileNeighbour(stack, backend, SECONDS);
      results.push(...lines);
      return failed;
    }
    const orgs: Org[] = [];
    for (let i = 0; i < ORGS; i++) {
      const slug = `load-${i}`;
      await backend.createOrganization(slug, { plan: "free", storageCap: STORAGE_CAP, analysisCap: ANALYSIS_CAP });
      const { key } = await backend.createKey(slug);
      orgs.push({ slug, key, uploads: new Map(), readyImages: [], predictions: new Set(), segmentations: [] });
    }
    say(
      `load: ${ORGS} organizations x ${CLIENTS} clients for ${SECONDS} s (storage cap ${STORAGE_CAP}, analysis cap ${ANALYSIS_CAP}); one runner, concurrency 2`,
    );

    const start = performance.now();
    const until = Date.now() + SECONDS * 1000;
    let loading = true;
    const sampler = sampleOneAtATime(stack, orgs, () => loading);
    await Promise.all(orgs.flatMap((org) => Array.from({ length: CLIENTS }, (_, i) => client(stack, org, i, until))));
    loading = false;
    await sampler.done;
    const loadSeconds = (performance.now() - start) / 1000;
    const loadSamples = samples.length;
    results.push(...report(loadSeconds));

    const settleStart = performance.now();
    const { uploadProblems, predictionProblems } = await settle(stack, orgs, SETTLE_SECONDS);
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
