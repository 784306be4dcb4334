// Deleting an image (or a training's labels) and submitting work for it cannot interleave: the
// deletion first claims the image, in one statement that succeeds only while no queued or running
// job uses it, and a job is inserted only while its images are ready and unclaimed and its
// segmentations exist. Whichever comes first wins; the other is refused, and nothing is charged
// for a job that could never run.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { submitGpuJob } from "../../worker/services/jobs.ts";
import { organizationById } from "../../worker/services/organizations.ts";
import { INTERRUPTED_DELETION_MS, sweepStorage } from "../../worker/services/storage-sweeper.ts";
import { call, createOrg, json, type TestOrg, uploadImage, ONE_SQUARE_GEOJSON } from "./helpers.ts";
import { dashboardCall, signIn } from "./dashboard-helpers.ts";
import { completePrediction } from "./runner-helpers.ts";

function importInto(org: TestOrg, imageId: string): Promise<Response> {
  const form = new FormData();
  form.append("image_id", imageId);
  form.append("file", new File([ONE_SQUARE_GEOJSON], "cells.geojson"));
  return call("/segmentation", { key: org.key, body: form });
}

/** An image with an imported segmentation, so a training can learn from it. */
async function labelledImage(org: TestOrg): Promise<{ imageId: string; segmentationId: string }> {
  const image = await uploadImage(org);
  const { segmentation_id } = await json<{ segmentation_id: string }>(await importInto(org, image.id));
  return { imageId: image.id, segmentationId: segmentation_id };
}

/** The state a deletion in progress leaves: the image claimed, its bytes and record not yet gone. */
const claim = (imageId: string, at = Date.now()) => env.DB.prepare("UPDATE images SET deleting_since = ?1 WHERE id = ?2").bind(at, imageId).run();

const jobsOf = async (org: TestOrg) =>
  (await env.DB.prepare("SELECT kind, status, reason FROM jobs WHERE org_id = ?1 AND kind IN ('prediction', 'training')").bind(org.id).all()).results;

const predict = (org: TestOrg, imageId: string) => call("/predict", { key: org.key, json: { image_id: imageId, model_id: "cpsam" } });
const train = (org: TestOrg, imageId: string) => call("/job/training", { key: org.key, json: { model_id: "cpsam", image_ids: [imageId] } });

describe("an image being deleted", () => {
  it("takes no new work: a prediction, a training, an import or a preview is refused with 409, and nothing is charged", async () => {
    const org = await createOrg();
    const { imageId } = await labelledImage(org);
    await claim(imageId);
    const beingDeleted = { detail: `Image ${imageId} is being deleted` };

    for (const response of [await predict(org, imageId), await train(org, imageId), await importInto(org, imageId)]) {
      expect(response.status, response.url).toBe(409);
      expect(await json(response), response.url).toEqual(beingDeleted);
    }
    const session = await signIn(org);
    const preview = await dashboardCall(session, `/api/images/${imageId}/preview`, { method: "POST" });
    expect(preview.status).toBe(409);
    expect(await json(preview)).toEqual(beingDeleted);

    expect(await jobsOf(org)).toEqual([]);
    expect(await json(await dashboardCall(session, "/api/usage"))).toMatchObject({ analyses_this_month: { used: 0 } });
    expect((await env.BUCKET.list({ prefix: `orgs/${org.id}/segmentations/` })).objects).toHaveLength(1); // the one imported before
  });

  it("is refused by the job's own insert even when the request checked the image before the claim", async () => {
    const org = await createOrg();
    const organization = (await organizationById(env.DB, org.id))!;
    const { imageId, segmentationId } = await labelledImage(org);
    await claim(imageId); // after the request's checks passed, before its insert
    const prediction = submitGpuJob(env, organization, {
      kind: "prediction",
      imageId,
      imageIds: [imageId],
      segmentationIds: [],
      modelId: "cpsam",
      input: { params: {} },
      dedupeKey: `prediction:${imageId}`,
      skipIfIdentical: ["SUBMITTED"],
      exclusive: true,
      timeLimitSeconds: 600,
    });
    await expect(prediction).rejects.toMatchObject({ status: 409, detail: `Image ${imageId} is being deleted` });

    // A training's labels deleted between its checks and its insert.
    const other = await labelledImage(org);
    await env.DB.prepare("DELETE FROM segmentations WHERE id = ?1").bind(other.segmentationId).run();
    const training = submitGpuJob(env, organization, {
      kind: "training",
      imageIds: [other.imageId],
      segmentationIds: [other.segmentationId],
      modelId: "cpsam",
      input: { image_ids: [other.imageId], segmentation_ids: [other.segmentationId], name: null, steps: null },
      dedupeKey: `training:cpsam:${other.segmentationId}`,
      skipIfIdentical: ["SUBMITTED", "STARTED"],
      exclusive: true,
      timeLimitSeconds: 1200,
    });
    await expect(training).rejects.toMatchObject({ status: 404, detail: `Segmentation with id ${other.segmentationId} not found` });
    expect(segmentationId).not.toBe(other.segmentationId);
    expect(await jobsOf(org)).toEqual([]);
  });
});

describe("deleting an image", () => {
  it("is refused while a job uses it, and claims nothing then: the job runs to its end, after which the image can go", async () => {
    const org = await createOrg();
    const image = await uploadImage(org);
    const { prediction_id } = await json<{ prediction_id: string }>(await predict(org, image.id));
    const refused = await call(`/image/${image.id}`, { key: org.key, method: "DELETE" });
    expect(refused.status).toBe(409);
    expect(await json(refused)).toEqual({ detail: `Image ${image.id} is used by queued prediction ${prediction_id}; delete it once that job has finished` });
    const row = await env.DB.prepare("SELECT deleting_since FROM images WHERE id = ?1").bind(image.id).first<{ deleting_since: number | null }>();
    expect(row?.deleting_since).toBeNull();

    await completePrediction(prediction_id);
    expect((await json(await call(`/predict/${prediction_id}`, { key: org.key }))).status).toBe("COMPLETED");
    expect((await call(`/image/${image.id}`, { key: org.key, method: "DELETE" })).status).toBe(204);
    expect((await call(`/image/${image.id}`, { key: org.key })).status).toBe(404);
  });

  it("racing a prediction or a training for the image: exactly one wins, and no job is left to fail for a missing image", async () => {
    // Each round starts one of the two a little after the other (a few turns of the event loop), so
    // they meet at different points of each other's way and each wins some rounds.
    for (let round = 0; round < 12; round++) {
      const org = await createOrg();
      const { imageId } = await labelledImage(org);
      const startDelete = () => call(`/image/${imageId}`, { key: org.key, method: "DELETE" });
      const startSubmit = () => (round % 2 === 0 ? predict(org, imageId) : train(org, imageId));
      const first = round % 3 === 0 ? startDelete() : startSubmit();
      for (let turn = 0; turn < round * 2; turn++) await Promise.resolve();
      const second = round % 3 === 0 ? startSubmit() : startDelete();
      const [firstDone, secondDone] = await Promise.all([first, second]);
      const [deleted, submitted] = round % 3 === 0 ? [firstDone, secondDone] : [secondDone, firstDone];
      const jobs = await jobsOf(org);
      if (deleted.status === 204) {
        expect([404, 409], `round ${round}`).toContain(submitted.status);
        expect(jobs, `round ${round}`).toEqual([]);
        expect((await call(`/image/${imageId}`, { key: org.key })).status).toBe(404);
      } else {
        expect(deleted.status, `round ${round}`).toBe(409);
        expect(submitted.status, `round ${round}`).toBe(202);
        expect(jobs, `round ${round}`).toEqual([expect.objectContaining({ status: "SUBMITTED", reason: null })]);
        expect((await call(`/image/${imageId}`, { key: org.key })).status).toBe(200);
      }
    }
  }, 30_000); // twelve rounds of upload, race and checks

  it("that was interrupted after its claim is finished by the storage sweep; a claim in progress is left alone", async () => {
    const org = await createOrg();
    const interrupted = await uploadImage(org, "interrupted.png");
    const inProgress = await uploadImage(org, "in-progress.png");
    await claim(interrupted.id, Date.now() - INTERRUPTED_DELETION_MS - 1000);
    await claim(inProgress.id);

    await sweepStorage(env);
    expect((await call(`/image/${interrupted.id}`, { key: org.key })).status).toBe(404);
    expect((await env.BUCKET.list({ prefix: `orgs/${org.id}/images/${interrupted.id}/` })).objects).toEqual([]);
    expect((await call(`/image/${inProgress.id}`, { key: org.key })).status).toBe(200);
    expect((await env.BUCKET.list({ prefix: `orgs/${org.id}/images/${inProgress.id}/` })).objects).toHaveLength(1);
  });
});
