// Faults on the real local stack (workerd, runner processes): workerd killed during conversions
// and restarted, a runner killed during a training, a runner whose worker disappears for 30 s.
// Each time every job ends COMPLETED or FAILED with a reason, once: one result per job, nothing
// left SUBMITTED or STARTED. Leases are short (10 s) so that what a dead holder leaves behind is
// taken back within the test's minutes; the code under test runs on real time. The local D1 file
// is read only while nothing else uses it (workerd down, or no runner calling): a second process
// on it makes the worker's own queries fail with SQLITE_BUSY.
import type { ChildProcess } from "node:child_process";
import { encode as encodePng } from "fast-png";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LocalStack, startStack } from "../../scripts/local-stack.ts";
import { stackClient, syntheticNuclei } from "../fixtures/nuclei-grid.ts";

const LEASE_SECONDS = 10;
let stack: LocalStack;

beforeAll(async () => {
  // Conversion messages live in workerd's memory locally: the ones a kill loses are sent again
  // after WAKE_UP_RESEND_SECONDS (ten minutes by default).
  stack = await startStack({ leaseSeconds: LEASE_SECONDS, workerVars: { WAKE_UP_RESEND_SECONDS: "15" } });
}, 180_000);

afterAll(async () => {
  await stack?.stop();
}, 60_000);

const { api, postJson } = stackClient(() => stack);

function nucleiPng(width: number, height: number): Uint8Array<ArrayBuffer> {
  return encodePng({ width, height, data: syntheticNuclei(width, height).data, depth: 16, channels: 1 }) as Uint8Array<ArrayBuffer>;
}

async function upload(name: string, width: number, height: number): Promise<string> {
  const form = new FormData();
  form.append("file", new File([nucleiPng(width, height)], name));
  return (await api<{ image: { id: string } }>("/upload", { method: "POST", body: form })).image.id;
}

/** The job as its organization sees it, with the runner holding it from the jobs table (no API shows runners). */
async function jobWithHolder(id: string): Promise<Record<string, unknown>> {
  const job = await api(`/job/${id}`);
  const [row] = stack.sql(`SELECT lease_holder FROM jobs WHERE id = '${id}'`);
  return { ...job, lease_holder: row?.lease_holder ?? null };
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read().catch(() => undefined);
    if ((value !== undefined && done(value)) || Date.now() > deadline) {
      if (value === undefined) throw new Error("the stack did not answer");
      return value;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

const ended = (j: Record<string, unknown>) => j.status === "COMPLETED" || j.status === "FAILED";

/** The jobs of `kind` that have not ended, straight from D1 (see above for when). */
const openJobs = (kind: string) => stack.sql(`SELECT id, status FROM jobs WHERE kind = '${kind}' AND status IN ('SUBMITTED', 'STARTED')`);

async function stopRunner(runner: ChildProcess): Promise<void> {
  if (runner.exitCode !== null || runner.signalCode !== null) return;
  const exited = new Promise((resolve) => runner.once("exit", resolve));
  runner.kill("SIGTERM");
  await exited;
}

describe("workerd killed during conversions, then restarted", () => {
  it("every upload ends ready (or failed with a reason) and every conversion COMPLETED once", async () => {
    // A runner beside it, as `npm start` has: its lease calls run the sweep (wrangler dev fires no cron).
    const runner = stack.startRunner();
    const ids: string[] = [];
    for (let i = 0; i < 16; i++) {
      const png = nucleiPng(64, 64);
      const { image, upload: plan } = await postJson<{ image: { id: string }; upload: { urls: { url: string }[] } }>("/upload", {
        name: `c${i}.png`,
        size: png.length,
      });
      const put = await fetch(plan.urls[0]!.url, { method: "PUT", body: png }); // a small PNG: one part
      expect(put.status).toBe(200);
      ids.push(image.id);
    }
    // Every completion is answered (its conversion queued), then workerd dies mid-way through them.
    await Promise.all(ids.map((id) => postJson(`/upload/${id}/complete`, {})));
    let interrupted: Record<string, unknown>[] = [];
    await stack.restartWorker({ whileDown: () => (interrupted = openJobs("conversion")) });
    expect(interrupted.length).toBeGreaterThan(0);

    const images = await Promise.all(
      ids.map((id) =>
        until(
          () => api(`/upload/${id}`),
          (i) => i.upload_status !== "processing",
          150_000,
        ),
      ),
    );
    for (const image of images) expect(image).toMatchObject({ upload_status: "ready", width: 64, height: 64 });
    await stopRunner(runner);
    const conversions = stack.sql(
      `SELECT image_id, status, count(*) AS n FROM jobs WHERE kind = 'conversion' AND image_id IN (${ids.map((id) => `'${id}'`).join(",")}) GROUP BY image_id, status`,
    );
    expect(conversions).toHaveLength(ids.length);
    for (const row of conversions) expect(row).toMatchObject({ status: "COMPLETED", n: 1 });
    console.log(
      `[faults] conversions not finished when workerd was killed: ${interrupted.length} of ${ids.length} (${interrupted.map((j) => j.status).join(", ")})`,
    );
  }, 240_000);
});

describe("a runner killed during a training", () => {
  it("its lease runs out, another runner trains the model: COMPLETED once, one model", async () => {
    const doomed = stack.startRunner({ RUNNER_ID: "doomed" });
    const imageId = await upload("train.png", 256, 256);
    const { prediction_id } = await postJson<{ prediction_id: string }>("/predict", { image_id: imageId, model_id: "cpsam" });
    expect(await until(() => api(`/predict/${prediction_id}`), ended, 120_000)).toMatchObject({ status: "COMPLETED" });

    const { job_id } = await postJson<{ job_id: string }>("/job/training", { model_id: "cpsam", image_ids: [imageId], steps: 10, name: "survivor" });
    const training = await until(
      () => jobWithHolder(job_id),
      (j) => (j.lease_holder === "doomed" && j.stage === "training") || ended(j),
      180_000,
    );
    expect(training).toMatchObject({ status: "STARTED", lease_holder: "doomed", stage: "training", attempts: 1 });
    doomed.kill("SIGKILL");

    const heir = stack.startRunner({ RUNNER_ID: "heir" });
    const done = await until(() => api(`/job/${job_id}`), ended, 300_000);
    expect(done).toMatchObject({ status: "COMPLETED", attempts: 2, reason: null });
    expect(await api(`/models/${done.result_model_id}`)).toMatchObject({ name: "survivor", base_model_id: "cpsam" });
    await stopRunner(heir);
    const models = stack.sql(`SELECT id FROM models WHERE training_job_id = '${job_id}'`);
    expect(models).toEqual([{ id: done.result_model_id }]);
  }, 600_000);
});

describe("a runner whose worker disappears for 30 s", () => {
  it("keeps running; the job ends COMPLETED once, its late reports refused and its results whole", async () => {
    const runner = stack.startRunner({ RUNNER_ID: "steady" }, "pipe");
    let log = "";
    runner.stdout!.on("data", (chunk) => (log += chunk));
    runner.stderr!.on("data", (chunk) => (log += chunk));
    const imageId = await upload("big.png", 2048, 2048);
    const { prediction_id } = await postJson<{ prediction_id: string }>("/predict", { image_id: imageId, model_id: "cpsam" });
    const working = await until(
      () => jobWithHolder(prediction_id),
      (j) => (j.lease_holder === "steady" && !["leased", "fetching"].includes(j.stage as string)) || ended(j),
      120_000,
    );
    expect(working).toMatchObject({ status: "STARTED", lease_holder: "steady" });

    let firstLease: Record<string, unknown> = {};
    await stack.restartWorker({
      downMs: 30_000,
      whileDown: () => (firstLease = stack.sql(`SELECT lease_token, attempts FROM jobs WHERE id = '${prediction_id}'`)[0] ?? {}),
    });
    expect(firstLease).toMatchObject({ attempts: 1, lease_token: expect.any(String) });
    const done = await until(() => api(`/predict/${prediction_id}`), ended, 300_000);
    expect(done).toMatchObject({ status: "COMPLETED" });
    expect(runner.exitCode).toBeNull();

    // Whatever the first attempt still has to say comes too late, and is refused without effect.
    const late = (what: string, body: Record<string, unknown>) =>
      fetch(`${stack.api}/internal/jobs/${prediction_id}/${what}`, {
        method: "POST",
        headers: { Authorization: `Bearer ${stack.runnerToken}`, "Content-Type": "application/json" },
        body: JSON.stringify({ lease_token: firstLease.lease_token, ...body }),
      }).then((r) => r.status);
    expect(await late("heartbeat", { progress: 0.5 })).toBe(409);
    expect(await late("urls", {})).toBe(409);
    expect(await late("complete", { result: { roi_count: 1, confluency: 0, width: 2048, height: 2048 } })).toBe(409);
    expect(await late("fail", { reason: "late", fault: "runner" })).toBe(409);
    expect(await api(`/predict/${prediction_id}`)).toMatchObject({ status: "COMPLETED", cell_count: done.cell_count });

    await stopRunner(runner);
    const segmentations = stack.sql(`SELECT id, roi_count FROM segmentations WHERE job_id = '${prediction_id}'`);
    expect(segmentations).toEqual([{ id: done.segmentation_id, roi_count: done.cell_count }]);
    const csv = await (
      await fetch(`${stack.api}/export/${done.segmentation_id}/measurements.csv`, { headers: { Authorization: `Bearer ${stack.key}` } })
    ).text();
    expect(csv.trim().split("\n")).toHaveLength((done.cell_count as number) + 1);
    expect(openJobs("prediction")).toEqual([]);
    console.log(
      `[faults] the prediction ended after ${done.attempts} attempt(s); the runner logged:\n${log
        .split("\n")
        .filter((l) => /lease lost|failed:|completed|could not|handed back/.test(l))
        .slice(-8)
        .join("\n")}`,
    );
  }, 480_000);
});
