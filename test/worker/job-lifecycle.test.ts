// The runner's side of the contract, played over HTTP: lease, heartbeat, signed URLs, complete,
// fail, lease expiry and redelivery.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { leaseNextJob } from "../../worker/services/job-leasing.ts";
import { call, createOrg, json, RUNNER_TOKEN, type TestOrg, uploadImage } from "./helpers.ts";
import { type Lease, leaseJob, runner } from "./runner-helpers.ts";

async function lease(runnerId = "runner-a", wait = 5): Promise<Lease | null> {
  const response = await runner("/jobs/lease", { runner_id: runnerId, wait_seconds: wait });
  if (response.status === 204) return null;
  expect(response.status).toBe(200);
  return json<Lease>(response);
}

async function submit(org: TestOrg): Promise<string> {
  const image = await uploadImage(org);
  return (await json(await call("/predict", { key: org.key, json: { image_id: image.id, model_id: "cpsam" } }))).prediction_id as string;
}

/** Lets a lease run out without waiting for the clock. */
async function expireLease(jobId: string) {
  await env.DB.prepare("UPDATE jobs SET lease_expires_at = ? WHERE id = ?")
    .bind(Date.now() - 1, jobId)
    .run();
}

const result = {
  roi_count: 3,
  confluency: 0.25,
  width: 8,
  height: 6,
  diameter: 17.5,
  modality: { modality: "brightfield", source: "detected" },
  diameter_basis: { source: "calibration", reason: "0.499 µm/px from the file: histology objects of 5.1 µm at 10.2 px" },
  timings: { total_ms: 12 },
};

describe("a prediction from lease to COMPLETED", () => {
  it("runs the whole lifecycle a runner sees", async () => {
    const org = await createOrg();
    const predictionId = await submit(org);

    const job = (await lease())!;
    expect(job).toMatchObject({ job_id: predictionId, kind: "prediction", attempt: 1, model: { id: "cpsam" } });
    expect((await json(await call(`/predict/${predictionId}`, { key: org.key }))).status).toBe("STARTED");

    // The input image arrives through its signed URL, with no API key.
    const input = await call(job.image.url);
    expect(input.status).toBe(200);
    expect((await input.arrayBuffer()).byteLength).toBeGreaterThan(0);

    const beat = await runner(`/jobs/${job.job_id}/heartbeat`, { lease_token: job.lease_token, progress: 0.5, stage: "inference" });
    expect(beat.status).toBe(200);
    expect(await json(await call(`/predict/${predictionId}`, { key: org.key }))).toMatchObject({ status: "STARTED", progress: 0.5, stage: "inference" });

    // Completing before the artifact exists is refused and changes nothing.
    const early = await runner(`/jobs/${job.job_id}/complete`, { lease_token: job.lease_token, result });
    expect(early.status).toBe(400);

    const artifact = new Uint8Array([1, 2, 3, 4]);
    const put = await call(job.output.artifact_url, { method: "PUT", body: artifact, headers: { "Content-Length": "4" } });
    expect(put.status).toBe(200);
    const done = await runner(`/jobs/${job.job_id}/complete`, { lease_token: job.lease_token, result });
    expect(await json(done)).toEqual({ job_id: predictionId, status: "COMPLETED" });

    const view = await json(await call(`/predict/${predictionId}`, { key: org.key }));
    expect(view).toMatchObject({ status: "COMPLETED", progress: 1, segmentation_id: job.output.segmentation_id, cell_count: 3 });
    const segmentation = await json<{ modality: unknown }>(await call(`/segmentation/${job.output.segmentation_id}`, { key: org.key }));
    expect(segmentation).toMatchObject({
      image_id: job.image.id,
      model_name: "cpsam",
      source: "model",
      cell_count: 3,
      confluency: 0.25,
      diameter: 17.5,
      width: 8,
      height: 6,
    });
    expect(segmentation.modality).toEqual({ modality: "brightfield", source: "detected" });
    // Why it ran at its diameter, as the runner said.
    expect(segmentation).toMatchObject({
      diameter_basis: { source: "calibration", reason: "0.499 µm/px from the file: histology objects of 5.1 µm at 10.2 px" },
    });

    // Completing twice is harmless: same answer, still one segmentation.
    const twice = await runner(`/jobs/${job.job_id}/complete`, { lease_token: job.lease_token, result: { ...result, roi_count: 99 } });
    expect(await json(twice)).toEqual({ job_id: predictionId, status: "COMPLETED" });
    const count = await env.DB.prepare("SELECT count(*) AS n, max(roi_count) AS rois FROM segmentations WHERE job_id = ?")
      .bind(predictionId)
      .first<{ n: number; rois: number }>();
    expect(count).toEqual({ n: 1, rois: 3 });
  });

  it("answers 204 when there is no work, after waiting at most wait_seconds", async () => {
    // Drain whatever earlier tests left queued.
    while (await lease("drain", 0));
    expect(await lease("runner-a", 0.3)).toBeNull();
  });
});

describe("leases", () => {
  it("an expired lease makes the job leasable again; the old holder's heartbeat, output and completion are refused", async () => {
    const org = await createOrg();
    const predictionId = await submit(org);
    while (true) {
      const first = (await lease("runner-a"))!;
      if (first.job_id !== predictionId) continue;
      await expireLease(predictionId);

      const second = (await lease("runner-b"))!;
      expect(second).toMatchObject({ job_id: predictionId, attempt: 2 });
      expect(second.lease_token).not.toBe(first.lease_token);

      expect((await runner(`/jobs/${predictionId}/heartbeat`, { lease_token: first.lease_token })).status).toBe(409);
      const artifactKey = `orgs/${org.id}/segmentations/${second.output.segmentation_id}/rois.bin`;
      const late = await call(first.output.artifact_url, { method: "PUT", body: new Uint8Array([9]), headers: { "Content-Length": "1" } });
      expect(late.status).toBe(409);
      expect(await env.BUCKET.head(artifactKey)).toBeNull();
      expect((await runner(`/jobs/${predictionId}/complete`, { lease_token: first.lease_token, result })).status).toBe(409);

      const put = await call(second.output.artifact_url, { method: "PUT", body: new Uint8Array([1, 2]), headers: { "Content-Length": "2" } });
      expect(put.status).toBe(200);
      expect((await runner(`/jobs/${predictionId}/complete`, { lease_token: second.lease_token, result })).status).toBe(200);
      // Once the job is COMPLETED: the late attempt is still refused, and writes nothing over the result; its own lease repeating itself is not.
      expect((await runner(`/jobs/${predictionId}/complete`, { lease_token: first.lease_token, result })).status).toBe(409);
      expect((await call(first.output.artifact_url, { method: "PUT", body: new Uint8Array([9]), headers: { "Content-Length": "1" } })).status).toBe(409);
      expect((await call(second.output.artifact_url, { method: "PUT", body: new Uint8Array([9]), headers: { "Content-Length": "1" } })).status).toBe(409);
      expect((await runner(`/jobs/${predictionId}/complete`, { lease_token: second.lease_token, result })).status).toBe(200);
      expect(new Uint8Array(await (await env.BUCKET.get(artifactKey))!.arrayBuffer())).toEqual(new Uint8Array([1, 2]));
      const segs = await env.DB.prepare("SELECT count(*) AS n FROM segmentations WHERE job_id = ?").bind(predictionId).first<{ n: number }>();
      expect(segs!.n).toBe(1);
      return;
    }
  });

  it("a job whose leases keep expiring ends FAILED with the reason after its last attempt", async () => {
    const org = await createOrg();
    const predictionId = await submit(org);
    let attempts = 0;
    while (attempts < 3) {
      const job = (await lease())!;
      if (job.job_id !== predictionId) continue;
      attempts = job.attempt;
      await expireLease(predictionId);
    }
    expect(await lease("runner-a", 0)).toBeNull();
    const view = await json(await call(`/predict/${predictionId}`, { key: org.key }));
    expect(view).toMatchObject({ status: "FAILED", attempts: 3 });
    expect(view.reason).toMatch(/Lease expired after attempt 3/);
  });

  it("a retryable failure is retried; a failure of the job's own is final with its reason", async () => {
    const org = await createOrg();
    const predictionId = await submit(org);
    let job = (await lease())!;
    while (job.job_id !== predictionId) job = (await lease())!;
    const retried = await runner(`/jobs/${predictionId}/fail`, { lease_token: job.lease_token, reason: "worker unreachable", retryable: true });
    expect(await json(retried)).toMatchObject({ status: "SUBMITTED", attempts: 1 });

    job = (await lease())!;
    expect(job).toMatchObject({ job_id: predictionId, attempt: 2 });
    const final = await runner(`/jobs/${predictionId}/fail`, {
      lease_token: job.lease_token,
      reason: "Image could not be decoded: TIFF strip 3 is truncated",
      retryable: false,
    });
    expect(await json(final)).toMatchObject({ status: "FAILED" });
    expect(await json(await call(`/predict/${predictionId}`, { key: org.key }))).toMatchObject({
      status: "FAILED",
      reason: "Image could not be decoded: TIFF strip 3 is truncated",
    });
    // A failed prediction no longer blocks the organization.
    expect((await call("/predict", { key: org.key, json: { image_id: job.image.id, model_id: "cpsam" } })).status).toBe(202);
  });
});

describe("a runner that stops", () => {
  it("releases a job it leased while shutting down: the attempt is not counted, the next runner has it at once", async () => {
    const org = await createOrg();
    const predictionId = await submit(org);
    const leased = await leaseJob(predictionId, "runner-stopping");
    expect(leased.attempt).toBe(1);

    const released = await runner(`/jobs/${predictionId}/release`, { lease_token: leased.lease_token });
    expect(await json(released)).toEqual({ job_id: predictionId, status: "SUBMITTED", attempts: 0 });
    expect(await leaseJob(predictionId, "runner-b")).toMatchObject({ attempt: 1 });
    // The old lease is gone: releasing it again is refused.
    expect((await runner(`/jobs/${predictionId}/release`, { lease_token: leased.lease_token })).status).toBe(409);
  });

  it("a released lease's URLs stay refused when the job is leased again under the same attempt number; the new lease's work", async () => {
    const org = await createOrg();
    const predictionId = await submit(org);
    const released = await leaseJob(predictionId, "runner-stopping");
    expect((await runner(`/jobs/${predictionId}/release`, { lease_token: released.lease_token })).status).toBe(200);
    const next = await leaseJob(predictionId, "runner-b");
    expect(next.attempt).toBe(released.attempt);
    const put = (url: string) => call(url, { method: "PUT", body: new Uint8Array([9]), headers: { "Content-Length": "1" } });
    const stale = await put(released.output.artifact_url);
    expect(stale.status).toBe(409);
    expect(await json(stale)).toEqual({ detail: `The lease this URL was signed for no longer holds job ${predictionId}; nothing was written` });
    expect((await put(next.output.artifact_url)).status).toBe(200);
    // Each lease names its own id, never its token.
    const leaseOf = (url: string) => new URL(url).searchParams.get("lease");
    expect(leaseOf(next.output.artifact_url)).not.toBe(leaseOf(released.output.artifact_url));
    expect(next.output.artifact_url).not.toContain(next.lease_token);
  });

  it("stops waiting for work: a job submitted after it left goes to the next runner, on attempt 1", async () => {
    const org = await createOrg();
    const hangUp = new AbortController();
    const waiting = call("/internal/jobs/lease", { key: RUNNER_TOKEN, json: { runner_id: "runner-gone", wait_seconds: 5 }, signal: hangUp.signal }).catch(
      () => null,
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    hangUp.abort();
    await waiting;

    const predictionId = await submit(org);
    expect(await leaseJob(predictionId, "runner-b")).toMatchObject({ attempt: 1 });
  });

  it("a lease granted as its runner hangs up is withdrawn: the attempt is not counted and the job is leasable at once", async () => {
    const org = await createOrg();
    const predictionId = await submit(org);
    // Take everything queued before it, then hand it back: its wake-up is now the only message.
    const first = await leaseJob(predictionId, "runner-a");
    await runner(`/jobs/${predictionId}/release`, { lease_token: first.lease_token });
    // Still listening when the wait starts, gone by the time the job has been started for it.
    let looks = 0;
    const hangsUpDuringStart = {
      get aborted() {
        return ++looks > 1;
      },
    } as AbortSignal;
    expect(await leaseNextJob(env, "runner-gone", { waitMs: 0, signal: hangsUpDuringStart })).toBeNull();

    expect(await json(await call(`/predict/${predictionId}`, { key: org.key }))).toMatchObject({ status: "SUBMITTED", attempts: 0 });
    expect(await leaseJob(predictionId, "runner-b")).toMatchObject({ attempt: 1 });
  });
});
