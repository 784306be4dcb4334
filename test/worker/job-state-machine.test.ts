// The one job state machine beyond the happy path: conversions swept like GPU jobs, faults that say
// whose they are, payloads whose inputs went away, deletions that respect jobs, the storage sweeper
// and the plans' bounds on training.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sweepJobs } from "../../worker/services/jobs.ts";
import { ORPHANED_PROCESSING_MS, STALE_UPLOAD_MS, sweepStorage } from "../../worker/services/storage-sweeper.ts";
import { call, createOrg, json, type TestOrg, uploadImage } from "./helpers.ts";
import { leaseJob, runner } from "./runner-helpers.ts";

interface JobRow {
  status: string;
  attempts: number;
  reason: string | null;
  fault: string | null;
}

const jobRow = (id: string) => env.DB.prepare("SELECT status, attempts, reason, fault FROM jobs WHERE id = ?").bind(id).first<JobRow>();

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  for (let i = 0; i < 200; i++) {
    const value = await read();
    if (done(value)) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("condition never held");
}

async function predict(org: TestOrg, imageId: string): Promise<string> {
  const response = await call("/predict", { key: org.key, json: { image_id: imageId, model_id: "cpsam" } });
  expect(response.status).toBe(202);
  return (await json(response)).prediction_id as string;
}

/** An image with a segmentation to learn from (a stand-in row: training never reaches a runner here). */
async function labelledImage(org: TestOrg): Promise<string> {
  const image = await uploadImage(org);
  await env.DB.prepare(
    "INSERT INTO segmentations (id, org_id, image_id, image_name, source, roi_count, confluency, width, height, artifact_key, created_at) VALUES (?, ?, ?, 'cells.png', 'model', 3, 0.1, 8, 6, 'k', 0)",
  )
    .bind(crypto.randomUUID(), org.id, image.id)
    .run();
  return image.id;
}

const train = (org: TestOrg, body: Record<string, unknown>) => call("/job/training", { key: org.key, json: { model_id: "cpsam", ...body } });

/**
 * A conversion whose isolate died while probing: the image is processing and the job STARTED
 * under a lease nobody will renew, exactly what the consumer leaves behind when it is killed.
 */
async function conversionLeftByDeadIsolate(org: TestOrg, attempts: number): Promise<{ imageId: string; jobId: string; r2Key: string }> {
  const image = await uploadImage(org);
  const { r2_key: r2Key } = (await env.DB.prepare("SELECT r2_key FROM images WHERE id = ?").bind(image.id).first<{ r2_key: string }>())!;
  await env.DB.prepare("UPDATE images SET status = 'processing' WHERE id = ?").bind(image.id).run();
  const jobId = crypto.randomUUID();
  await env.DB.prepare(
    `INSERT INTO jobs (id, org_id, kind, status, image_id, dedupe_key, attempts, max_attempts, lease_holder, lease_token, lease_expires_at, started_at, created_at, enqueued_at)
     VALUES (?1, ?2, 'conversion', 'STARTED', ?3, ?4, ?5, 3, 'worker', 'dead-isolate', ?6, ?6, ?6, ?6)`,
  )
    .bind(jobId, org.id, image.id, `conversion:${image.id}`, attempts, Date.now() - 1)
    .run();
  return { imageId: image.id, jobId, r2Key };
}

describe("conversions move through the same state machine", () => {
  it("a conversion whose isolate died after STARTED is swept back and finishes: the image becomes ready", async () => {
    const org = await createOrg();
    const { imageId, jobId } = await conversionLeftByDeadIsolate(org, 1);
    await sweepJobs(env);
    const image = await until(
      async () => json(await call(`/image/${imageId}`, { key: org.key })),
      (i) => i.upload_status !== "processing",
    );
    expect(image.upload_status).toBe("ready");
    expect(await jobRow(jobId)).toMatchObject({ status: "COMPLETED", attempts: 2 });
  });

  it("one whose last attempt died is FAILED with the reason, its image failed and its bytes freed", async () => {
    const org = await createOrg();
    const { imageId, jobId, r2Key } = await conversionLeftByDeadIsolate(org, 3);
    await sweepJobs(env);
    expect(await jobRow(jobId)).toMatchObject({ status: "FAILED", fault: "service", reason: expect.stringMatching(/stopped during attempt 3/) });
    const image = await json(await call(`/image/${imageId}`, { key: org.key }));
    expect(image).toMatchObject({ upload_status: "failed", upload_error: expect.stringMatching(/stopped during attempt 3/) });
    expect(await env.BUCKET.head(r2Key)).toBeNull();
  });
});

describe("failures say whose fault they are", () => {
  it("input and model faults are final at once; runner and service faults are tried again", async () => {
    const org = await createOrg();
    const image = await uploadImage(org);
    const predictionId = await predict(org, image.id);

    let job = await leaseJob(predictionId);
    const serviceFault = await runner(`/jobs/${predictionId}/fail`, { lease_token: job.lease_token, reason: "storage answered 503", fault: "service" });
    expect(await json(serviceFault)).toMatchObject({ status: "SUBMITTED", attempts: 1 });
    job = await leaseJob(predictionId);
    const runnerFault = await runner(`/jobs/${predictionId}/fail`, { lease_token: job.lease_token, reason: "out of memory", fault: "runner" });
    expect(await json(runnerFault)).toMatchObject({ status: "SUBMITTED", attempts: 2 });

    // A diameter that would rescale the image too large is the input's fault: no further attempt,
    // even from a runner that still says "retryable" (fault wins).
    job = await leaseJob(predictionId);
    const reason = "diameter 0.5 would rescale the image to 400000x300000, too large";
    const inputFault = await runner(`/jobs/${predictionId}/fail`, { lease_token: job.lease_token, reason, fault: "input", retryable: true });
    expect(await json(inputFault)).toMatchObject({ status: "FAILED", attempts: 3 });
    expect(await jobRow(predictionId)).toMatchObject({ status: "FAILED", fault: "input", reason });

    const other = await predict(org, image.id);
    job = await leaseJob(other);
    const modelFault = await runner(`/jobs/${other}/fail`, { lease_token: job.lease_token, reason: "model manifest is not valid JSON", fault: "model" });
    expect(await json(modelFault)).toMatchObject({ status: "FAILED", attempts: 1 });
  });

  it("a runner that predates faults still decides by `retryable`", async () => {
    const org = await createOrg();
    const predictionId = await predict(org, (await uploadImage(org)).id);
    const job = await leaseJob(predictionId);
    const retried = await runner(`/jobs/${predictionId}/fail`, { lease_token: job.lease_token, reason: "worker unreachable", retryable: true });
    expect(await json(retried)).toMatchObject({ status: "SUBMITTED" });
    expect(await jobRow(predictionId)).toMatchObject({ fault: "runner" });
  });
});

describe("a lease whose payload cannot be built", () => {
  it("fails the job for good with the real reason, not 'runner stopped reporting', and leases the next job", async () => {
    const org = await createOrg();
    const imageId = await labelledImage(org);
    const training = await json(await train(org, { image_ids: [imageId] }));
    // The labels went away meanwhile (the image is protected from deletion, its segmentation row is not).
    await env.DB.prepare("DELETE FROM segmentations WHERE image_id = ?").bind(imageId).run();
    const later = await createOrg();
    const predictionId = await predict(later, (await uploadImage(later)).id);

    expect(await leaseJob(predictionId)).toMatchObject({ job_id: predictionId });
    expect(await jobRow(training.job_id as string)).toMatchObject({
      status: "FAILED",
      fault: "input",
      reason: expect.stringMatching(/which this training learns from, was deleted/),
    });
  });

  it("a job whose inputs go during the attempt ends when its runner asks for fresh URLs (409 to the runner)", async () => {
    const org = await createOrg();
    const image = await uploadImage(org);
    const predictionId = await predict(org, image.id);
    const job = await leaseJob(predictionId);
    await env.DB.prepare("UPDATE images SET status = 'failed' WHERE id = ?").bind(image.id).run();
    expect((await runner(`/jobs/${predictionId}/urls`, { lease_token: job.lease_token })).status).toBe(409);
    expect(await jobRow(predictionId)).toMatchObject({ status: "FAILED", fault: "input", reason: expect.stringMatching(/deleted before the job could run/) });
  });
});

describe("output URLs", () => {
  it("are signed afresh by POST /jobs/{id}/urls, which a runner calls right before uploading", async () => {
    const org = await createOrg();
    const predictionId = await predict(org, (await uploadImage(org)).id);
    const job = await leaseJob(predictionId);
    await new Promise((r) => setTimeout(r, 1100));
    const fresh = await json<{ output: { artifact_url: string } }>(await runner(`/jobs/${predictionId}/urls`, { lease_token: job.lease_token }));
    const expires = (url: string) => Number(new URL(url).searchParams.get("expires"));
    expect(expires(fresh.output.artifact_url)).toBeGreaterThan(expires(job.output.artifact_url));
    const put = await call(fresh.output.artifact_url, { method: "PUT", body: new Uint8Array([1, 2, 3]), headers: { "Content-Length": "3" } });
    expect(put.status).toBe(200);
  });
});

describe("deleting an image a job uses", () => {
  it("is refused with 409 naming the queued prediction or training, and allowed once it has ended", async () => {
    const org = await createOrg();
    const imageId = await labelledImage(org);
    const predictionId = await predict(org, imageId);
    const refused = await call(`/image/${imageId}`, { key: org.key, method: "DELETE" });
    expect(refused.status).toBe(409);
    expect((await json(refused)).detail).toBe(`Image ${imageId} is used by queued prediction ${predictionId}; delete it once that job has finished`);

    const job = await leaseJob(predictionId);
    await runner(`/jobs/${predictionId}/fail`, { lease_token: job.lease_token, reason: "bad image", fault: "input" });
    const trainingId = (await json(await train(org, { image_ids: [imageId] }))).job_id;
    const stillRefused = await call(`/upload/${imageId}`, { key: org.key, method: "DELETE" });
    expect(stillRefused.status).toBe(409);
    expect((await json(stillRefused)).detail).toMatch(`queued training ${trainingId}`);

    await env.DB.prepare("UPDATE jobs SET status = 'FAILED' WHERE id = ?").bind(trainingId).run();
    expect((await call(`/image/${imageId}`, { key: org.key, method: "DELETE" })).status).toBe(204);
  });
});

describe("the storage sweeper", () => {
  it("removes what FAILED jobs' attempts wrote: a prediction's ROI artifact and preview, a training's model files", async () => {
    const org = await createOrg();
    const image = await uploadImage(org);
    const predictionId = await predict(org, image.id);
    const job = await leaseJob(predictionId);
    await call(job.output.artifact_url, { method: "PUT", body: new Uint8Array([1, 2, 3, 4]), headers: { "Content-Length": "4" } });
    const preview = await call(job.output.preview_url!, { method: "PUT", body: new Uint8Array([5, 6]), headers: { "Content-Length": "2" } });
    expect(preview.status).toBe(200);
    await runner(`/jobs/${predictionId}/fail`, { lease_token: job.lease_token, reason: "bad image", fault: "input" });
    const artifact = `orgs/${org.id}/segmentations/${job.output.segmentation_id}/rois.bin`;
    expect(await env.BUCKET.head(artifact)).not.toBeNull();

    const imageId = await labelledImage(org);
    const training = await json(await train(org, { image_ids: [imageId] }));
    const leased = await json<{ lease_token: string; output: { model_id: string; files: { onnx: string; manifest: string } } }>(
      await leaseTraining(training.job_id as string),
    );
    await call(leased.output.files.onnx, { method: "PUT", body: new Uint8Array([9, 9]), headers: { "Content-Length": "2" } });
    await runner(`/jobs/${training.job_id}/fail`, { lease_token: leased.lease_token, reason: "training diverged", fault: "model" });
    expect((await env.BUCKET.list({ prefix: `models/${leased.output.model_id}/` })).objects).toHaveLength(1);

    await sweepStorage(env);
    expect(await env.BUCKET.head(artifact)).toBeNull();
    expect((await env.BUCKET.list({ prefix: `orgs/${org.id}/segmentations/${job.output.segmentation_id}/` })).objects).toEqual([]);
    expect((await env.BUCKET.list({ prefix: `models/${leased.output.model_id}/` })).objects).toHaveLength(0);
    const marked = await env.DB.prepare("SELECT count(*) AS n FROM jobs WHERE id IN (?, ?) AND outputs_cleared_at IS NOT NULL")
      .bind(predictionId, training.job_id)
      .first<{ n: number }>();
    expect(marked!.n).toBe(2);
  });

  it("gives up uploads left pending for a day: the multipart upload is aborted and the record failed with the reason", async () => {
    const org = await createOrg();
    const started = await json<{ image: { id: string }; upload: { urls: { url: string }[] } }>(
      await call("/upload", { key: org.key, json: { name: "late.tif", size: 1000 } }),
    );
    const fresh = await json<{ image: { id: string } }>(await call("/upload", { key: org.key, json: { name: "fresh.tif", size: 1000 } }));
    await env.DB.prepare("UPDATE images SET updated_at = ? WHERE id = ?")
      .bind(Date.now() - STALE_UPLOAD_MS - 1, started.image.id)
      .run();

    await sweepStorage(env);
    expect(await json(await call(`/upload/${started.image.id}`, { key: org.key }))).toMatchObject({
      upload_status: "failed",
      upload_error: expect.stringMatching(/not completed within 24 hours/),
      upload: null,
    });
    // A 1000-byte upload is one part.
    expect((await call(started.upload.urls[0]!.url, { method: "PUT", body: new Uint8Array(1000), headers: { "Content-Length": "1000" } })).status).toBe(404);
    expect((await json(await call(`/upload/${fresh.image.id}`, { key: org.key }))).upload_status).toBe("pending");
  });
});

describe("an image left processing with no conversion (its completing request died midway)", () => {
  it("gets its conversion queued by the sweeper, or goes back to pending if its upload never completed", async () => {
    const org = await createOrg();
    const whole = await uploadImage(org);
    const started = await json<{ image: { id: string } }>(await call("/upload", { key: org.key, json: { name: "half.tif", size: 1000 } }));
    const longAgo = Date.now() - ORPHANED_PROCESSING_MS - 1;
    await env.DB.prepare("UPDATE images SET status = 'processing', updated_at = ? WHERE id IN (?, ?)").bind(longAgo, whole.id, started.image.id).run();

    await sweepStorage(env);
    expect((await json(await call(`/upload/${started.image.id}`, { key: org.key }))).upload_status).toBe("pending");
    const image = await until(
      async () => json(await call(`/image/${whole.id}`, { key: org.key })),
      (i) => i.upload_status !== "processing",
    );
    expect(image.upload_status).toBe("ready");
  });
});

async function leaseTraining(jobId: string): Promise<Response> {
  for (;;) {
    const response = await runner("/jobs/lease", { runner_id: "runner-t", wait_seconds: 5 });
    expect(response.status).toBe(200);
    const body = await response.clone().json<{ job_id: string }>();
    if (body.job_id === jobId) return response;
  }
}

describe("per-plan bounds on training", () => {
  it("refuses with 402 what the plan does not allow: steps, images, pixels", async () => {
    const org = await createOrg({ plan: "free" });
    const imageId = await labelledImage(org);
    const steps = await train(org, { image_ids: [imageId], steps: 5000 });
    expect(steps.status).toBe(402);
    expect((await json(steps)).detail).toBe("Training limit of the free plan: at most 1000 steps per training, 5000 asked for; upgrading the plan raises it");

    await env.DB.prepare("UPDATE images SET width = 10000, height = 10000 WHERE id = ?").bind(imageId).run();
    const pixels = await train(org, { image_ids: [imageId] });
    expect(pixels.status).toBe(402);
    expect((await json(pixels)).detail).toMatch(/at most 64000000 pixels per training, the images hold 100000000/);

    const many: string[] = [];
    for (let i = 0; i < 21; i++) many.push(await labelledImage(org));
    const images = await train(org, { image_ids: many });
    expect(images.status).toBe(402);
    expect((await json(images)).detail).toMatch(/at most 20 images per training, 21 given/);
  });

  it("runs one training at a time per organization", async () => {
    const org = await createOrg({ plan: "pro" });
    const first = await train(org, { image_ids: [await labelledImage(org)] });
    expect(first.status).toBe(202);
    const second = await train(org, { image_ids: [await labelledImage(org)] });
    expect(second.status).toBe(400);
    expect((await json(second)).detail).toMatch(/A training is already queued/);
  });

  it("a training past its plan's time bound is FAILED whatever its heartbeats say", async () => {
    const org = await createOrg({ plan: "free" });
    const training = await json(await train(org, { image_ids: [await labelledImage(org)] }));
    const leased = await json<{ lease_token: string; training: { max_seconds: number } }>(await leaseTraining(training.job_id as string));
    expect(leased.training.max_seconds).toBe(600);
    const beat = () => runner(`/jobs/${training.job_id}/heartbeat`, { lease_token: leased.lease_token, progress: 0.5, stage: "training" });
    expect((await beat()).status).toBe(200);

    // Started long ago: its time bound (plus fetching and uploading) has passed.
    await env.DB.prepare("UPDATE jobs SET started_at = ? WHERE id = ?")
      .bind(Date.now() - (600 + 11 * 60) * 1000, training.job_id)
      .run();
    // Its heartbeat no longer renews the lease (its runner hears it lost the job) ...
    expect((await beat()).status).toBe(409);
    // ... and the sweep fails it with the reason.
    await sweepJobs(env);
    expect(await jobRow(training.job_id as string)).toMatchObject({
      status: "FAILED",
      reason: "Training ran past its plan's time bound of 600 s; it was stopped",
    });
    expect((await beat()).status).toBe(409);
  });
});
