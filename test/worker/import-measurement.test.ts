// An imported segmentation's intensities: the import queues a measurement job, a runner leases it
// with the image and the import's ROIs, writes them back measured, and on completion the measured
// artifact replaces the import's, so the exports carry the intensity columns. The test plays the
// runner over the internal API (the runner's own measuring is checked in test/e2e/local-stack.test.ts).
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { readRoiArtifact } from "../../common/roi-artifact/reader.ts";
import { encodeRoiArtifact } from "../../common/roi-artifact/writer.ts";
import type { Roi } from "../../schema/roi.ts";
import { call, createOrg, json, ONE_SQUARE_GEOJSON, type TestOrg, uploadImage } from "./helpers.ts";
import { runner } from "./runner-helpers.ts";
import { formatMeasurement } from "../../schema/measurements.ts";

interface TrainingLease {
  training: { examples: { labels: { segmentation_id: string; artifact_url: string } }[] };
}

interface MeasurementLease {
  job_id: string;
  kind: string;
  lease_token: string;
  image: { id: string; url: string; channels: number };
  rois: { segmentation_id: string; artifact_url: string };
  output: { artifact_url: string };
}

interface Imported {
  segmentation_id: string;
  measurements: { status: string; detail: string | null };
}

function importInto(org: TestOrg, imageId: string): Promise<Response> {
  const form = new FormData();
  form.append("image_id", imageId);
  form.append("file", new File([ONE_SQUARE_GEOJSON], "cells.geojson"));
  return call("/segmentation", { key: org.key, body: form });
}

async function importOneSquare(org: TestOrg): Promise<{ imageId: string; segmentationId: string; jobId: string; imported: Imported }> {
  const image = await uploadImage(org);
  const imported = await json<Imported>(await importInto(org, image.id));
  const job = await env.DB.prepare("SELECT id FROM jobs WHERE kind = 'measurement' AND segmentation_id = ?")
    .bind(imported.segmentation_id)
    .first<{ id: string }>();
  expect(job).not.toBeNull();
  return { imageId: image.id, segmentationId: imported.segmentation_id, jobId: job!.id, imported };
}

async function measurementsOf(org: TestOrg, segmentationId: string): Promise<Imported["measurements"]> {
  return (await json<{ measurements: Imported["measurements"] }>(await call(`/segmentation/${segmentationId}`, { key: org.key }))).measurements;
}

/** Leases until the measurement `jobId` comes up (jobs of other tests in this file are taken and left). */
async function leaseMeasurement(jobId: string): Promise<MeasurementLease> {
  for (;;) {
    const response = await runner("/jobs/lease", { runner_id: "runner-m", wait_seconds: 5 });
    expect(response.status).toBe(200);
    const job = await json<MeasurementLease>(response);
    if (job.job_id === jobId) return job;
  }
}

async function objectsOf(org: TestOrg, segmentationId: string): Promise<string[]> {
  const listing = await env.BUCKET.list({ prefix: `orgs/${org.id}/segmentations/${segmentationId}/` });
  return listing.objects.map((o) => o.key.slice(o.key.lastIndexOf("/") + 1)).sort();
}

describe("an imported segmentation's measurement", () => {
  it("is leased with the image and the import's ROIs; once completed, the exports carry the intensities and only the measured artifact is stored", async () => {
    const org = await createOrg();
    const { imageId, segmentationId, jobId, imported } = await importOneSquare(org);
    // Not measured yet: the import and its record say so, and asking for intensities says why there are none.
    expect(imported.measurements).toEqual({ status: "measuring", detail: null });
    expect(await measurementsOf(org, segmentationId)).toEqual({ status: "measuring", detail: null });
    const before = await call(`/export/${segmentationId}/measurements.csv?columns=roi_id&columns=intensity`, { key: org.key });
    expect(before.status).toBe(400);
    expect((await json<{ detail: string }>(before)).detail).toContain(
      `Segmentation ${segmentationId} is an import whose intensities are still being measured from the image: ask again once GET /segmentation/${segmentationId} says measurements.status "measured"`,
    );

    const lease = await leaseMeasurement(jobId);
    expect(lease).toMatchObject({ kind: "measurement", image: { id: imageId, channels: 1 }, rois: { segmentation_id: segmentationId } });
    const stored = await call(lease.rois.artifact_url);
    expect(stored.status).toBe(200);
    const { header, rois } = await readRoiArtifact(stored.body!);
    const measured: Roi[] = [];
    // The square's nine pixels of the test image (pixel i holds 97 i): 97 x (9, 10, 11, 17, 18, 19, 25, 26, 27).
    const std = 97 * Math.sqrt(390 / 9);
    for await (const roi of rois) measured.push({ ...roi, intensity: Float64Array.from([1746, 1746, std, 873, 2619, 15714]) });
    expect(measured).toHaveLength(1);
    const { roiCount: _n, vertexCount: _v, ...description } = header;
    const chunks: Uint8Array[] = [];
    for await (const chunk of encodeRoiArtifact({ ...description, channelNames: ["c0"] }, measured)) chunks.push(chunk);
    const artifact = new Uint8Array(await new Blob(chunks).arrayBuffer());
    const put = await call(lease.output.artifact_url, { method: "PUT", body: artifact, headers: { "Content-Length": String(artifact.length) } });
    expect(put.status).toBe(200);
    const done = await runner(`/jobs/${jobId}/complete`, { lease_token: lease.lease_token, result: { measured_rois: 1, channels: 1 } });
    expect(done.status).toBe(200);
    expect(await measurementsOf(org, segmentationId)).toEqual({ status: "measured", detail: null });
    const listed = await json<{ items: { id: string; measurements: unknown }[] }>(await call(`/segmentations?image_id=${imageId}`, { key: org.key }));
    expect(listed.items).toEqual([expect.objectContaining({ id: segmentationId, measurements: { status: "measured", detail: null } })]);

    const csv = await (await call(`/export/${segmentationId}/measurements.csv?columns=roi_id&columns=intensity`, { key: org.key })).text();
    expect(csv).toBe(
      `roi_id,intensity_c0_mean,intensity_c0_median,intensity_c0_std,intensity_c0_min,intensity_c0_max,intensity_c0_sum\r\n${segmentationId}-1,1746,1746,${formatMeasurement(std)},873,2619,15714\r\n`,
    );
    expect(await objectsOf(org, segmentationId)).toEqual(["rois.measured.bin"]);
    // The outlines the viewer draws come from the measured artifact too.
    const rows = await (await call(`/export/${segmentationId}/measurements.csv?columns=roi_id&columns=area_px`, { key: org.key })).text();
    expect(rows).toBe(`roi_id,area_px\r\n${segmentationId}-1,9\r\n`);
  });

  it("that failed for good is on the record with its reason, and the exports keep geometry and shape", async () => {
    const org = await createOrg();
    const { segmentationId, jobId } = await importOneSquare(org);
    const lease = await leaseMeasurement(jobId);
    const failed = await runner(`/jobs/${jobId}/fail`, { lease_token: lease.lease_token, reason: "The image's pixels could not be read", fault: "input" });
    expect(failed.status).toBe(200);
    expect(await measurementsOf(org, segmentationId)).toEqual({ status: "failed", detail: "The image's pixels could not be read" });
    const intensity = await call(`/export/${segmentationId}/measurements.csv?columns=intensity`, { key: org.key });
    expect(intensity.status).toBe(400);
    expect((await json<{ detail: string }>(intensity)).detail).toContain(
      `Segmentation ${segmentationId} has no intensities: The image's pixels could not be read`,
    );
    const shape = await call(`/export/${segmentationId}/measurements.csv?columns=roi_id&columns=area_px`, { key: org.key });
    expect(await shape.text()).toBe(`roi_id,area_px\r\n${segmentationId}-1,9\r\n`);
  });

  it("completed after a training was leased with the import's ROIs: the lease's URL is gone, the training's fresh URLs give the measured ROIs", async () => {
    const org = await createOrg();
    const { imageId, segmentationId, jobId } = await importOneSquare(org);
    const measurement = await leaseMeasurement(jobId);
    const submitted = await call("/job/training", { key: org.key, json: { model_id: "cpsam", image_ids: [imageId] } });
    expect(submitted.status).toBe(202);
    const trainingId = (await json<{ job_id: string }>(submitted)).job_id;
    const training = await leaseMeasurement(trainingId);
    const leasedLabels = (training as unknown as TrainingLease).training.examples[0]!.labels;
    expect(leasedLabels.segmentation_id).toBe(segmentationId);

    const stored = await call(measurement.rois.artifact_url);
    const { header, rois } = await readRoiArtifact(stored.body!);
    const measured: Roi[] = [];
    for await (const roi of rois) measured.push({ ...roi, intensity: Float64Array.from([1, 1, 0, 1, 1, 9]) });
    const { roiCount: _n, vertexCount: _v, ...description } = header;
    const chunks: Uint8Array[] = [];
    for await (const chunk of encodeRoiArtifact({ ...description, channelNames: ["c0"] }, measured)) chunks.push(chunk);
    const artifact = new Uint8Array(await new Blob(chunks).arrayBuffer());
    await call(measurement.output.artifact_url, { method: "PUT", body: artifact, headers: { "Content-Length": String(artifact.length) } });
    expect((await runner(`/jobs/${jobId}/complete`, { lease_token: measurement.lease_token, result: { measured_rois: 1, channels: 1 } })).status).toBe(200);

    // The runner meets a 404 where its lease pointed (worker/services/runner-jobs.ts replaced the import's artifact) and asks again.
    expect((await call(leasedLabels.artifact_url)).status).toBe(404);
    const fresh = await json<TrainingLease>(await runner(`/jobs/${trainingId}/urls`, { lease_token: training.lease_token }));
    const again = await call(fresh.training.examples[0]!.labels.artifact_url);
    expect(again.status).toBe(200);
    expect(new Uint8Array(await again.arrayBuffer())).toEqual(artifact);
  });

  it("is no job of the client's: GET /job/{id} does not know it", async () => {
    const org = await createOrg();
    const { jobId } = await importOneSquare(org);
    expect((await call(`/job/${jobId}`, { key: org.key })).status).toBe(404);
  });

  it("of a segmentation deleted before a runner took it fails for good with the reason, and stores nothing", async () => {
    const org = await createOrg();
    const { segmentationId, jobId } = await importOneSquare(org);
    expect((await call(`/segmentation/${segmentationId}`, { key: org.key, method: "DELETE" })).status).toBe(204);
    // A lease that comes to the job finds its input gone: FAILED at once, and the runner is given the next job or none.
    const job = () => env.DB.prepare("SELECT status, reason, fault FROM jobs WHERE id = ?").bind(jobId).first<{ status: string }>();
    for (let leases = 0; leases < 5 && (await job())!.status === "SUBMITTED"; leases++) {
      expect((await runner("/jobs/lease", { runner_id: "runner-m", wait_seconds: 1 })).status).not.toBe(500);
    }
    expect(await job()).toEqual({ status: "FAILED", reason: `Segmentation ${segmentationId} was deleted before it could be measured`, fault: "input" });
    expect(await objectsOf(org, segmentationId)).toEqual([]);
  });

  it("completed after its segmentation was deleted is refused, and its artifact removed", async () => {
    const org = await createOrg();
    const { segmentationId, jobId } = await importOneSquare(org);
    const lease = await leaseMeasurement(jobId);
    const artifact = new Uint8Array(await (await call(lease.rois.artifact_url)).arrayBuffer());
    expect((await call(`/segmentation/${segmentationId}`, { key: org.key, method: "DELETE" })).status).toBe(204);
    const put = await call(lease.output.artifact_url, { method: "PUT", body: artifact, headers: { "Content-Length": String(artifact.length) } });
    expect(put.status).toBe(200);
    const done = await runner(`/jobs/${jobId}/complete`, { lease_token: lease.lease_token, result: { measured_rois: 1, channels: 1 } });
    expect(done.status).toBe(409);
    expect(await json(done)).toEqual({ detail: `Segmentation ${segmentationId} was deleted while it was being measured` });
    expect(await objectsOf(org, segmentationId)).toEqual([]);
  });
});

describe("an organization's measurements in hand", () => {
  const inHand = async (org: TestOrg) => {
    const count = (sql: string) => env.DB.prepare(sql).bind(org.id).first<{ n: number }>();
    return {
      segmentations: (await count("SELECT count(*) AS n FROM segmentations WHERE org_id = ?"))!.n,
      measurements: (await count("SELECT count(*) AS n FROM jobs WHERE org_id = ? AND kind = 'measurement' AND status IN ('SUBMITTED', 'STARTED')"))!.n,
      artifacts: (await env.BUCKET.list({ prefix: `orgs/${org.id}/segmentations/` })).objects.length,
    };
  };

  it("are at most 2, as previews: a third import is answered 429 with Retry-After and stores nothing; once one is done, it is accepted", async () => {
    const org = await createOrg();
    const first = await importOneSquare(org);
    await importOneSquare(org);
    const refused = await importInto(org, first.imageId);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("Retry-After")).toBe("5");
    expect(await json(refused)).toEqual({
      detail: "This organization already has 2 imported segmentations being measured, the most at once; ask again when one is done",
    });
    expect(await inHand(org)).toEqual({ segmentations: 2, measurements: 2, artifacts: 2 });

    const lease = await leaseMeasurement(first.jobId);
    expect((await runner(`/jobs/${first.jobId}/fail`, { lease_token: lease.lease_token, reason: "unreadable", fault: "input" })).status).toBe(200);
    expect((await importInto(org, first.imageId)).status).toBe(201);
    expect(await inHand(org)).toEqual({ segmentations: 3, measurements: 2, artifacts: 3 });
  });

  it("hold against concurrent imports: of six at once, two are accepted and four answered 429, leaving two measurements queued", async () => {
    const org = await createOrg();
    const image = await uploadImage(org);
    const statuses = (await Promise.all(Array.from({ length: 6 }, () => importInto(org, image.id)))).map((r) => r.status).sort();
    expect(statuses).toEqual([201, 201, 429, 429, 429, 429]);
    expect(await inHand(org)).toEqual({ segmentations: 2, measurements: 2, artifacts: 2 });
  });
});

describe("a measurement's lease token", () => {
  it("is compared in constant time (both sides hashed): one character off is refused by /urls and /complete, the right one accepted", async () => {
    const org = await createOrg();
    const { jobId } = await importOneSquare(org);
    const lease = await leaseMeasurement(jobId);
    const near = lease.lease_token.slice(0, -1) + (lease.lease_token.endsWith("A") ? "B" : "A");
    const digest = vi.spyOn(crypto.subtle, "digest");
    try {
      const urls = await runner(`/jobs/${jobId}/urls`, { lease_token: near });
      expect(urls.status).toBe(409);
      expect(await json(urls)).toEqual({ detail: `Job ${jobId} is not held by this lease (it is STARTED)` });
      const done = await runner(`/jobs/${jobId}/complete`, { lease_token: near, result: { measured_rois: 1, channels: 1 } });
      expect(done.status).toBe(409);
      const hashed = digest.mock.calls.map(([, data]) => new TextDecoder().decode(data as Uint8Array));
      expect(hashed.filter((text) => text === near)).toHaveLength(2);
      expect(hashed.filter((text) => text === lease.lease_token)).toHaveLength(2);
    } finally {
      digest.mockRestore();
    }
    expect((await runner(`/jobs/${jobId}/urls`, { lease_token: lease.lease_token })).status).toBe(200);
  });
});
