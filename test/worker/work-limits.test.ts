// Every parameter that multiplies a job's work is bounded before the work (schema/work-limits.ts):
// POST /predict refuses a diameter or a cell expansion's reach past its limit with a 422 naming it,
// and every runner's job has a time limit, past which it is FAILED with the reason, its lease
// released, and never leased again (at-least-once delivery included).
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { jobTimeLimitSeconds, MAX_DIAMETER_PX, MAX_EXPANSION_REACH_PX, MAX_NITER, MIN_DIAMETER_PX, TIME_LIMITS } from "../../schema/work-limits.ts";
import { createPreviewJob, sweepJobs } from "../../worker/services/jobs.ts";
import { getImage } from "../../worker/services/images.ts";
import { gpuJobQueue } from "../../worker/queues/gpu-job-queue.ts";
import { call, createOrg, json, ONE_SQUARE_GEOJSON, pngBytes, type TestOrg, uploadImage } from "./helpers.ts";
import { type Lease, leaseJob, runner } from "./runner-helpers.ts";

interface Issue {
  loc: (string | number)[];
  msg: string;
  type: string;
  input?: unknown;
  ctx?: Record<string, unknown>;
}

const predict = (org: TestOrg, imageId: string, params: Record<string, unknown>) =>
  call("/predict", { key: org.key, json: { image_id: imageId, model_id: "cpsam", params } });

async function refusal(response: Response): Promise<Issue> {
  expect(response.status).toBe(422);
  const { detail } = await json<{ detail: Issue[] }>(response);
  expect(detail).toHaveLength(1);
  return detail[0]!;
}

const jobRow = (id: string) =>
  env.DB.prepare("SELECT status, reason, fault, attempts, lease_token, time_limit_seconds FROM jobs WHERE id = ?").bind(id).first<Record<string, unknown>>();

describe("POST /predict refuses parameters past the work limits with 422", () => {
  it(`a diameter above ${MAX_DIAMETER_PX} px or below ${MIN_DIAMETER_PX} px, naming the limit`, async () => {
    const org = await createOrg();
    const image = await uploadImage(org);
    expect(await refusal(await predict(org, image.id, { diameter: 1000 }))).toMatchObject({
      loc: ["body", "params", "diameter"],
      msg: "diameter is at most 300 px, the limit (downscale the image for larger objects)",
      type: "less_than_equal",
      ctx: { max: 300 },
      input: 1000,
    });
    expect(await refusal(await predict(org, image.id, { diameter: 0.5 }))).toMatchObject({
      loc: ["body", "params", "diameter"],
      msg: 'diameter is at least 5 px, the limit (0 or "auto" estimates it)',
      input: 0.5,
    });
    // At the limits, and 0 (estimate it), a prediction is queued.
    expect((await predict(org, image.id, { diameter: MAX_DIAMETER_PX })).status).toBe(202);
  });

  it("the issue's mask parameters, each past the range a user needs: niter, cellprob_threshold, flow_threshold", async () => {
    const org = await createOrg();
    const image = await uploadImage(org);
    const response = await predict(org, image.id, { diameter: 300, niter: 10000, cellprob_threshold: -20, flow_threshold: 0 });
    expect(response.status).toBe(422);
    const { detail } = await json<{ detail: Issue[] }>(response);
    expect(detail.map((issue) => issue.loc)).toEqual([
      ["body", "params", "cellprob_threshold"],
      ["body", "params", "niter"],
    ]);
    expect(detail[1]).toMatchObject({
      msg: `niter is at most ${MAX_NITER}, ten times Cellpose's default of 200 (it multiplies the mask stage's work)`,
      input: 10000,
    });
    expect((await refusal(await predict(org, image.id, { flow_threshold: 5 }))).loc).toEqual(["body", "params", "flow_threshold"]);
    // At the ends of the ranges a prediction is queued, its time limit priced with its steps.
    const { prediction_id } = await json<{ prediction_id: string }>(
      await predict(org, image.id, { diameter: 300, niter: MAX_NITER, cellprob_threshold: -6, flow_threshold: 0 }),
    );
    const limit = jobTimeLimitSeconds({ kind: "prediction", pixels: 8 * 6, diameter: 300, niter: MAX_NITER, flowThreshold: 0 });
    // 300 s + 48 px x (10 s x 1 + 0.003 s x 2000 x 300 / 24 flow steps a pixel) a megapixel
    expect(limit).toBe(Math.ceil(300 + 48e-6 * (10 + 0.003 * 25000)));
    expect(await jobRow(prediction_id)).toMatchObject({ time_limit_seconds: limit });
  });

  it("parameters that price a prediction past the 4-h limit, naming the one to lower; the image's size alone is capped, not refused", async () => {
    const org = await createOrg();
    const image = await uploadImage(org);
    // A 20000² slide: 400 MP (the size is the record's; the work is priced from it before any pixel is read).
    await env.DB.prepare("UPDATE images SET width = 20000, height = 20000 WHERE id = ?").bind(image.id).run();
    const issue = await refusal(await predict(org, image.id, { diameter: 300, niter: MAX_NITER }));
    expect(issue).toMatchObject({ loc: ["body", "params", "niter"], type: "value_error", input: MAX_NITER });
    expect(issue.msg).toBe(
      "niter 2000 prices this prediction of 400 MP at about 9.9 h of work (25000 flow steps a pixel, 1x the network's pixels), past the 4 h a prediction may take: lower it, or segment a smaller region",
    );
    expect((await refusal(await predict(org, image.id, { diameter: 12, augment: true }))).loc).toEqual(["body", "params", "augment"]);
    // The same slide with the defaults (an estimated diameter may enlarge it 3x: 10 h): queued, its limit the longest a job has.
    const { prediction_id } = await json<{ prediction_id: string }>(await predict(org, image.id, {}));
    expect(await jobRow(prediction_id)).toMatchObject({ time_limit_seconds: TIME_LIMITS.maxSeconds });
  });

  it("a cell expansion reaching past 200 px: in pixels, or in µm at the given pixel size or the file's", async () => {
    const org = await createOrg();
    const image = await uploadImage(org);
    expect(await refusal(await predict(org, image.id, { cell_expansion_px: 500 }))).toMatchObject({
      loc: ["body", "params", "cell_expansion_px"],
      msg: "cell_expansion_px is at most 200 px, the limit a cell expansion may reach",
      ctx: { max: MAX_EXPANSION_REACH_PX },
    });
    // 500 µm at 0.125 µm a pixel: the block margins of the issue's 289-fold reads.
    expect(await refusal(await predict(org, image.id, { cell_expansion_um: 500, pixel_size_um: 0.125 }))).toMatchObject({
      loc: ["body", "params", "cell_expansion_um"],
      msg: "cell_expansion_um 500 at a pixel size of 0.125 µm reaches 4000 px, past the limit of 200 px a cell expansion may reach (at most 25 µm at this pixel size)",
      type: "value_error",
      input: 500,
    });
    // A file calibrated at 1e-4 µm a pixel: 1 µm reaches 10,000 px.
    await env.DB.prepare("UPDATE images SET pixel_size_x_um = 0.0001, pixel_size_y_um = 0.0001, pixel_size_source = 'tiff' WHERE id = ?").bind(image.id).run();
    expect((await refusal(await predict(org, image.id, { cell_expansion_um: 1 }))).msg).toBe(
      `cell_expansion_um 1 at a pixel size of 0.0001 µm reaches 10000 px, past the limit of 200 px a cell expansion may reach (at most 0.02 µm at this pixel size) (the pixel size of image ${image.id}'s file; pixel_size_um overrides it)`,
    );
    // Within the limit it is queued: 5 µm at 0.25 µm a pixel reaches 20 px.
    expect((await predict(org, image.id, { cell_expansion_um: 5, pixel_size_um: 0.25 })).status).toBe(202);
  });
});

describe("time limits of runners' jobs", () => {
  it("every prediction, preview and measurement has one, from its image's size, and its lease says how much is left", async () => {
    const org = await createOrg();
    const image = await uploadImage(org, "big.png", pngBytes(400, 300));
    const { prediction_id } = await json<{ prediction_id: string }>(await predict(org, image.id, { augment: true }));
    const limit = jobTimeLimitSeconds({ kind: "prediction", pixels: 400 * 300, augment: true });
    expect(limit).toBe(344); // 300 s + 0.12 MP x 10 s x 4 (augmented) x 9 (an estimated diameter may enlarge it 3x)
    expect(await jobRow(prediction_id)).toMatchObject({ time_limit_seconds: limit });
    const leased = (await leaseJob(prediction_id)) as Lease & { time_limit: { seconds: number; left_seconds: number } };
    expect(leased.time_limit.seconds).toBe(limit);
    expect(leased.time_limit.left_seconds).toBeGreaterThan(limit - 5);
    expect(leased.time_limit.left_seconds).toBeLessThanOrEqual(limit);

    const preview = (await createPreviewJob(env, (await getImage(env.DB, org.id, image.id))!))!;
    expect(preview.timeLimitSeconds).toBe(jobTimeLimitSeconds({ kind: "preview", pixels: 400 * 300 }));

    // An imported segmentation's measurement.
    const form = new FormData();
    form.append("image_id", image.id);
    form.append("file", new File([ONE_SQUARE_GEOJSON], "cells.geojson"));
    expect((await call("/segmentation", { key: org.key, body: form })).status).toBe(201);
    const measurement = await env.DB.prepare("SELECT time_limit_seconds FROM jobs WHERE kind = 'measurement' AND image_id = ?").bind(image.id).first();
    expect(measurement).toEqual({ time_limit_seconds: jobTimeLimitSeconds({ kind: "measurement", pixels: 400 * 300 }) });
  });

  it("past it a running job is FAILED with the reason, its lease released, and a redelivery does not run it again", async () => {
    const org = await createOrg();
    const image = await uploadImage(org);
    const { prediction_id: id } = await json<{ prediction_id: string }>(await predict(org, image.id, {}));
    const job = await leaseJob(id);
    const beat = () => runner(`/jobs/${id}/heartbeat`, { lease_token: job.lease_token, progress: 0.5, stage: "blocks" });
    expect((await beat()).status).toBe(200);

    // Its time limit ran out while it ran (started longer ago than the limit).
    const { time_limit_seconds: limit } = (await jobRow(id))!;
    await env.DB.prepare("UPDATE jobs SET started_at = ? WHERE id = ?")
      .bind(Date.now() - (limit as number) * 1000 - 1000, id)
      .run();
    // Its heartbeat no longer renews the lease: the runner hears it lost the job ...
    expect((await beat()).status).toBe(409);
    // ... and the sweep fails it with the reason and releases the lease.
    await sweepJobs(env);
    const reason = `Prediction ran past its time limit of ${limit} s (counted from its first start, for its image's size and parameters); it was stopped and will not be run again`;
    expect(await jobRow(id)).toMatchObject({ status: "FAILED", fault: "runner", reason, lease_token: null, attempts: 1 });
    expect(await json(await call(`/predict/${id}`, { key: org.key }))).toMatchObject({ status: "FAILED" });

    // At-least-once delivery: its wake-up comes again, and no runner is given it.
    await gpuJobQueue(env).send({ job_id: id });
    while (true) {
      const response = await runner("/jobs/lease", { runner_id: "runner-b", wait_seconds: 0.5 });
      if (response.status === 204) break;
      expect((await json<Lease>(response)).job_id).not.toBe(id);
    }
    expect(await jobRow(id)).toMatchObject({ status: "FAILED", attempts: 1, lease_token: null });
  });

  it("a job whose expired lease sent it back past its limit is FAILED, never started again", async () => {
    const org = await createOrg();
    const image = await uploadImage(org);
    const { prediction_id: id } = await json<{ prediction_id: string }>(await predict(org, image.id, {}));
    await leaseJob(id);
    // Its runner died (the lease expired) and its time ran out before the next runner asked.
    await env.DB.prepare("UPDATE jobs SET lease_expires_at = ?, started_at = ? WHERE id = ?")
      .bind(Date.now() - 1, Date.now() - 5 * 3600 * 1000, id)
      .run();
    const response = await runner("/jobs/lease", { runner_id: "runner-b", wait_seconds: 0.5 });
    if (response.status === 200) expect((await json<Lease>(response)).job_id).not.toBe(id);
    expect(await jobRow(id)).toMatchObject({ status: "FAILED", attempts: 1, lease_token: null });
    expect((await jobRow(id))!.reason).toMatch(/^Prediction ran past its time limit of \d+ s/);
  });

  it("a runner stopping a job at its limit fails it for good with the limit as the reason, though a runner's fault is otherwise retried", async () => {
    const org = await createOrg();
    const image = await uploadImage(org);
    const { prediction_id: id } = await json<{ prediction_id: string }>(await predict(org, image.id, {}));
    const job = await leaseJob(id);
    await env.DB.prepare("UPDATE jobs SET started_at = ? WHERE id = ?")
      .bind(Date.now() - 5 * 3600 * 1000, id)
      .run();
    const failed = await runner(`/jobs/${id}/fail`, { lease_token: job.lease_token, reason: "the job ran into its time limit of 312 s", fault: "runner" });
    expect(await json(failed)).toMatchObject({ status: "FAILED" });
    expect(await jobRow(id)).toMatchObject({ status: "FAILED", fault: "runner", lease_token: null });
    expect((await jobRow(id))!.reason).toMatch(/^Prediction ran past its time limit of \d+ s .*will not be run again$/);
  });
});
