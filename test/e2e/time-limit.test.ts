// A job past its time limit on the real stack: workerd and one runner process that takes one job at
// a time. The limits are scaled down (TIME_LIMIT_SCALE) so that one fires in seconds; the work is
// real: a mask stage of niter 2000 at 300 px on a 2048² image traces for about two minutes on two
// cores, in the runner's compute thread, while its main loop keeps its heartbeats and its timer.
import type { ChildProcess } from "node:child_process";
import { encode as encodePng } from "fast-png";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LocalStack, startStack } from "../../scripts/local-stack.ts";
import { stackClient, syntheticNuclei } from "../fixtures/nuclei-grid.ts";

const TIME_LIMIT_SCALE = 0.05;

let stack: LocalStack;
let runner: ChildProcess;
let runnerLog = "";

beforeAll(async () => {
  stack = await startStack({ workerVars: { TIME_LIMIT_SCALE: String(TIME_LIMIT_SCALE) } });
  runner = stack.startRunner({ RUNNER_CONCURRENCY: "1" }, "pipe");
  runner.stderr!.on("data", (chunk: Buffer) => {
    runnerLog += chunk.toString();
  });
}, 180_000);

afterAll(async () => {
  await stack?.stop();
}, 60_000);

const { api, postJson } = stackClient(() => stack);

async function upload(name: string, side: number): Promise<string> {
  const { data } = syntheticNuclei(side, side);
  const form = new FormData();
  form.append("file", new File([encodePng({ width: side, height: side, data, depth: 16, channels: 1 }) as Uint8Array<ArrayBuffer>], name));
  const { image } = await api<{ image: { id: string } }>("/upload", { method: "POST", body: form });
  return image.id;
}

type Prediction = {
  status: string;
  stage: string | null;
  reason: string | null;
  started_at: string | null;
  finished_at: string | null;
  cell_count: number | null;
};

/** Polls a prediction until it ends; `stages` collects the stages its heartbeats reported meanwhile. */
async function finished(id: string, timeoutMs: number, stages = new Set<string>()): Promise<Prediction> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const prediction = await api<Prediction>(`/predict/${id}`);
    if (prediction.stage) stages.add(prediction.stage);
    if (prediction.status === "COMPLETED" || prediction.status === "FAILED" || Date.now() > deadline) return prediction;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

describe("a job past its time limit", () => {
  it("is FAILED by the limit within seconds of it while its mask stage would run for minutes, and the runner's next job completes", async () => {
    const slow = await upload("slow.png", 2048);
    const quick = await upload("quick.png", 256);
    const { prediction_id: slowId } = await postJson<{ prediction_id: string }>("/predict", {
      image_id: slow,
      model_id: "cpsam",
      params: { diameter: 300, niter: 2000, cellprob_threshold: -6, flow_threshold: 0 },
    });
    const [{ time_limit_seconds: limit }] = stack.sql(`SELECT time_limit_seconds FROM jobs WHERE id = '${slowId}'`) as [{ time_limit_seconds: number }];
    // 300 s + 4.2 MP x 85 s priced, scaled: about 33 s, against about two minutes of tracing.
    expect(limit).toBeGreaterThan(20);
    expect(limit).toBeLessThan(60);

    const stages = new Set<string>();
    const failed = await finished(slowId, (limit + 60) * 1000, stages);
    expect(failed.status).toBe("FAILED");
    expect(failed.reason).toMatch(/time limit/);
    const ranFor = (Date.parse(failed.finished_at!) - Date.parse(failed.started_at!)) / 1000;
    expect(ranFor).toBeGreaterThanOrEqual(limit);
    expect(ranFor).toBeLessThanOrEqual(limit + 10);
    // It was stopped in the mask stage, which used to hold the runner's main thread: its own timer fired.
    expect(stages).toContain("masks");
    expect(runnerLog).toMatch(/the job ran into its time limit/);

    // The runner's one slot is free again: the next prediction runs now, not minutes later.
    const { prediction_id: quickId } = await postJson<{ prediction_id: string }>("/predict", { image_id: quick, model_id: "cpsam" });
    const done = await finished(quickId, 60_000);
    expect(done).toMatchObject({ status: "COMPLETED" });
    expect(done.cell_count).toBeGreaterThan(10);
    expect(runner.exitCode).toBeNull();
  }, 240_000);
});
