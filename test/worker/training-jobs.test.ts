// Training from corrected annotations: which segmentation each image is learned from, what a
// finished training reports (on the job and on its model), and deleting a custom model.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { getJobById } from "../../worker/services/jobs.ts";
import { trainingLabels } from "../../worker/services/trainings.ts";
import { call, createOrg, json, type TestOrg, uploadImage, ONE_SQUARE_GEOJSON } from "./helpers.ts";
import { dashboardCall, signIn } from "./dashboard-helpers.ts";
import { completePrediction, leaseJob, runner } from "./runner-helpers.ts";

interface TrainingLease {
  job_id: string;
  lease_token: string;
  training: { examples: { image: { id: string }; labels: { segmentation_id: string } }[]; steps: number | null; seed?: number };
  output: { model_id: string; files: { onnx: string; manifest: string } };
}

async function importAnnotation(org: TestOrg, imageId: string): Promise<string> {
  const form = new FormData();
  form.append("image_id", imageId);
  form.append("file", new File([ONE_SQUARE_GEOJSON], "cells.geojson"));
  const response = await call("/segmentation", { key: org.key, body: form });
  expect(response.status).toBe(201);
  return (await json(response)).segmentation_id as string;
}

/** An image with a model's segmentation made a minute ago (so what follows is unambiguously newer). */
async function predictedImage(org: TestOrg): Promise<{ imageId: string; predicted: string }> {
  const image = await uploadImage(org);
  const submitted = await json(await call("/predict", { key: org.key, json: { image_id: image.id, model_id: "cpsam" } }));
  const lease = await completePrediction(submitted.prediction_id as string);
  await env.DB.prepare("UPDATE segmentations SET created_at = created_at - 60000 WHERE id = ?").bind(lease.output.segmentation_id).run();
  return { imageId: image.id, predicted: lease.output.segmentation_id };
}

async function train(org: TestOrg, body: Record<string, unknown>): Promise<Response> {
  return call("/job/training", { key: org.key, json: { model_id: "cpsam", ...body } });
}

async function leaseTraining(jobId: string): Promise<TrainingLease> {
  return (await leaseJob(jobId)) as unknown as TrainingLease;
}

const metrics = {
  evaluated_on: "held_out",
  evaluated_images: 1,
  base: { ap50: 0.41, ap75: 0.12 },
  fine_tuned: { ap50: 0.78, ap75: 0.45 },
  chosen_step: 40,
  note: "fine-tuning improved held-out AP@0.5 on 1 pair from 0.410 to 0.780",
};

/** Plays the runner through a whole training: progress, the model's files, the result. */
async function runTraining(lease: TrainingLease, result: Record<string, unknown> = { steps: 40, seconds: 12.5, metrics }): Promise<void> {
  for (const url of [lease.output.files.onnx, lease.output.files.manifest]) {
    expect((await call(url, { method: "PUT", body: new Uint8Array([1, 2, 3]), headers: { "Content-Length": "3" } })).status).toBe(200);
  }
  const done = await runner(`/jobs/${lease.job_id}/complete`, { lease_token: lease.lease_token, result });
  expect(done.status).toBe(200);
}

describe("what a training learns from", () => {
  it("each image's most recent segmentation: an annotation imported after a prediction wins", async () => {
    const org = await createOrg();
    const { imageId } = await predictedImage(org);
    const imported = await importAnnotation(org, imageId);
    const { job_id } = await json(await train(org, { image_ids: [imageId] }));
    const lease = await leaseTraining(job_id as string);
    expect(lease.training.examples).toEqual([
      { image: expect.objectContaining({ id: imageId }), labels: expect.objectContaining({ segmentation_id: imported }) },
    ]);
  });

  it("a prediction made after the import is the most recent, and wins in turn", async () => {
    const org = await createOrg();
    const { imageId, predicted } = await predictedImage(org);
    const imported = await importAnnotation(org, imageId);
    await env.DB.prepare("UPDATE segmentations SET created_at = created_at + 120000 WHERE id = ?").bind(predicted).run();
    const { job_id } = await json(await train(org, { image_ids: [imageId] }));
    expect((await leaseTraining(job_id as string)).training.examples[0]?.labels.segmentation_id).toBe(predicted);
    expect(imported).not.toBe(predicted);
  });

  it("the segmentations named in segmentation_ids, the most recent for images not named", async () => {
    const org = await createOrg();
    const first = await predictedImage(org);
    await importAnnotation(org, first.imageId);
    const second = await predictedImage(org);
    const secondImport = await importAnnotation(org, second.imageId);
    const { job_id } = await json(await train(org, { image_ids: [first.imageId, second.imageId], segmentation_ids: [first.predicted] }));
    const labels = Object.fromEntries((await leaseTraining(job_id as string)).training.examples.map((e) => [e.image.id, e.labels.segmentation_id]));
    expect(labels).toEqual({ [first.imageId]: first.predicted, [second.imageId]: secondImport });
  });

  it("refuses a segmentation that is missing or another organization's (404) and one not of the images given (422)", async () => {
    const org = await createOrg();
    const other = await createOrg();
    const { imageId } = await predictedImage(org);
    const elsewhere = await predictedImage(org);
    const foreign = await importAnnotation(other, (await uploadImage(other)).id);

    for (const id of [foreign, "no-such-segmentation"]) {
      const refused = await train(org, { image_ids: [imageId], segmentation_ids: [id] });
      expect(refused.status).toBe(404);
      expect(await json(refused)).toEqual({ detail: `Segmentation with id ${id} not found` });
    }
    const misplaced = await train(org, { image_ids: [imageId], segmentation_ids: [elsewhere.predicted] });
    expect(misplaced.status).toBe(422);
    expect(await json(misplaced)).toEqual({
      detail: [
        {
          loc: ["body", "segmentation_ids", 0],
          msg: `Segmentation ${elsewhere.predicted} is of image ${elsewhere.imageId}, which is not in image_ids`,
          type: "value_error",
        },
      ],
    });
    const second = await importAnnotation(org, imageId);
    const twice = await train(org, { image_ids: [imageId], segmentation_ids: [second, second] });
    expect(twice.status).toBe(202); // naming the same one twice is naming it once
    const two = await train(org, { image_ids: [imageId], segmentation_ids: [await importAnnotation(org, imageId), second] });
    expect(two.status).toBe(422);
    expect(JSON.stringify(await json(two))).toMatch(/a second one for image/);
  });

  it("keeps a queued training's labels: deleting one is refused (409); a lease fails clearly on one deleted before that rule", async () => {
    const org = await createOrg();
    const { imageId, predicted } = await predictedImage(org);
    const { job_id } = await json(await train(org, { image_ids: [imageId], segmentation_ids: [predicted] }));
    const refused = await call(`/segmentation/${predicted}`, { key: org.key, method: "DELETE" });
    expect(refused.status).toBe(409);
    expect(await json(refused)).toEqual({
      detail: `Segmentation ${predicted} is what queued training ${job_id} learns from; delete it once that job has finished`,
    });
    expect((await call(`/segmentation/${predicted}`, { key: org.key })).status).toBe(200);
    // A training queued before deletions were refused may have lost its labels.
    await env.DB.prepare("DELETE FROM segmentations WHERE id = ?1").bind(predicted).run();
    await expect(trainingLabels(env, (await getJobById(env.DB, job_id as string))!)).rejects.toThrow(
      `Segmentation ${predicted} of image ${imageId}, which this training learns from, was deleted`,
    );
    // How a lease fails a job whose inputs are gone is the lease's own concern (job-lifecycle tests);
    // this one is taken out of the queue so later tests lease theirs.
    await env.DB.prepare("UPDATE jobs SET status = 'FAILED' WHERE id = ?").bind(job_id).run();
  });
});

describe("what a training reports", () => {
  it("GET /job shows progress and stage while it runs, then the trained model and its metrics", async () => {
    const org = await createOrg();
    const { imageId, predicted } = await predictedImage(org);
    const { job_id } = await json(await train(org, { image_ids: [imageId] }));
    const lease = await leaseTraining(job_id as string);
    expect((await runner(`/jobs/${job_id}/heartbeat`, { lease_token: lease.lease_token, progress: 0.4, stage: "training" })).status).toBe(200);
    expect(await json(await call(`/job/${job_id}`, { key: org.key }))).toMatchObject({
      status: "STARTED",
      progress: 0.4,
      stage: "training",
      result_model_id: null,
      metrics: null,
    });

    await runTraining(lease);
    const done = await json(await call(`/job/${job_id}`, { key: org.key }));
    expect(done).toMatchObject({ status: "COMPLETED", progress: 1, model_id: "cpsam", result_model_id: lease.output.model_id, metrics });

    const model = await json(await call(`/models/${lease.output.model_id}`, { key: org.key }));
    expect(model).toMatchObject({
      id: lease.output.model_id,
      is_public: false,
      base_model_id: "cpsam",
      training: { job_id, base_model_id: "cpsam", image_ids: [imageId], segmentation_ids: [predicted], steps: 40, seconds: 12.5, metrics },
    });
  });

  it("a single image's figures say they are on the training image", async () => {
    const org = await createOrg();
    const { imageId } = await predictedImage(org);
    const { job_id } = await json(await train(org, { image_ids: [imageId] }));
    const single = {
      ...metrics,
      evaluated_on: "training_image",
      note: "fine-tuning improved AP@0.5 on the training image (the only image given, so none could be held out) from 0.410 to 0.780",
    };
    const lease = await leaseTraining(job_id as string);
    await runTraining(lease, { steps: 40, seconds: 3, metrics: single });
    expect((await json(await call(`/job/${job_id}`, { key: org.key }))).metrics).toEqual(single);
  });

  it("figures drawn from regions of the images say how: the folds held out in turn, the regions judged, the steps then trained on every region", async () => {
    const org = await createOrg();
    const { imageId } = await predictedImage(org);
    const { job_id } = await json(await train(org, { image_ids: [imageId] }));
    const rotated = { ...metrics, evaluated_on: "rotated_regions", evaluated_images: 1, evaluated_regions: 2, folds: 2 };
    const lease = await leaseTraining(job_id as string);
    await runTraining(lease, { steps: 40, seconds: 3, metrics: rotated });
    expect((await json(await call(`/job/${job_id}`, { key: org.key }))).metrics).toEqual(rotated);

    const held = await json(await train(org, { image_ids: [imageId] }));
    const continued = { ...metrics, evaluated_on: "held_out_regions", evaluated_regions: 1, folds: 3, chosen_step: 42, steps_on_all_regions: 10 };
    await runTraining(await leaseTraining(held.job_id as string), { steps: 50, seconds: 3, metrics: continued });
    expect((await json(await call(`/job/${held.job_id}`, { key: org.key }))).metrics).toEqual(continued);
  });

  it("a request's seed goes to the runner and comes back in the metrics; none leaves the runner's default", async () => {
    const org = await createOrg();
    const { imageId } = await predictedImage(org);
    const seeded = await json(await train(org, { image_ids: [imageId], seed: 3 }));
    const lease = await leaseTraining(seeded.job_id as string);
    expect(lease.training.seed).toBe(3);
    const withSeed = { ...metrics, evaluated_on: "held_out_regions", evaluated_regions: 1, seed: 3 };
    await runTraining(lease, { steps: 40, seconds: 3, metrics: withSeed });
    expect((await json(await call(`/job/${seeded.job_id}`, { key: org.key }))).metrics).toEqual(withSeed);

    const unseeded = await json(await train(org, { image_ids: [imageId] }));
    expect((await leaseTraining(unseeded.job_id as string)).training).not.toHaveProperty("seed");
    for (const seed of [0, 1.5, 2 ** 31]) {
      const refused = await train(org, { image_ids: [imageId], seed });
      expect(refused.status, `seed ${seed}`).toBe(422);
      expect(JSON.stringify(await json(refused))).toContain("seed");
    }
  });

  it("a training's record and its model's summary show the evidence its guard decided on: images, objects, tiles, the gain and its interval", async () => {
    const org = await createOrg();
    const { imageId } = await predictedImage(org);
    const { job_id } = await json(await train(org, { image_ids: [imageId] }));
    const evidence = {
      images: 1,
      objects: 41,
      tiles: 20,
      min_objects: 20,
      fine_tuned_step: 812,
      fine_tuned_ap50: 0.944,
      gain: 0.006,
      gain_low: -0.03,
      gain_high: 0.04,
      confidence: 0.95,
      verdict: "too_few_to_tell",
    };
    const tooFew = {
      ...metrics,
      base: { ap50: 0.938, ap75: 0.7 },
      fine_tuned: { ap50: 0.938, ap75: 0.7 },
      chosen_step: 0,
      evidence,
      note: "on 1 held-out image (41 objects, 20 tiles) AP@0.5 rose from 0.938 to 0.944, +0.006 (95% interval -0.030 to +0.040): too few to tell a gain from noise, the base weights are returned unchanged",
    };
    const lease = await leaseTraining(job_id as string);
    await runTraining(lease, { steps: 812, seconds: 600, metrics: tooFew });
    expect((await json(await call(`/job/${job_id}`, { key: org.key }))).metrics).toEqual(tooFew);
    const model = await json(await call(`/models/${lease.output.model_id}`, { key: org.key }));
    expect(model.training).toMatchObject({ metrics: { evidence, chosen_step: 0 } });
    expect(model.description).toMatch(/^Same as its base/);
    // The dashboard's models page says it in words, the new model in the list its script refreshes (#own-models).
    const page = await (await dashboardCall(await signIn(org), "/models")).text();
    expect(page).toContain(
      "Too few to tell: AP@0.5 0.944 against 0.938 on 1 held-out image (41 objects), +0.006 (95% interval -0.030 to +0.040), a difference that could be noise",
    );
    const ownModels = page.slice(page.indexOf('id="own-models"'), page.indexOf("Start a training"));
    expect(ownModels).toContain(`data-model-id="${lease.output.model_id}"`);
    expect(ownModels).toContain("same as base: AP@0.5 0.938, too few to tell a gain");
  });

  it("a fine-tuning that scored higher by what could be noise gives a model marked unverified, with both figures", async () => {
    const org = await createOrg();
    const { imageId } = await predictedImage(org);
    const { job_id } = await json(await train(org, { image_ids: [imageId] }));
    const evidence = {
      images: 3,
      objects: 60,
      tiles: 30,
      min_objects: 20,
      fine_tuned_step: 40,
      fine_tuned_ap50: 0.62,
      gain: 0.02,
      gain_low: -0.01,
      gain_high: 0.05,
      confidence: 0.95,
      verdict: "too_few_to_tell",
    };
    const noisy = {
      ...metrics,
      evaluated_on: "held_out_regions",
      evaluated_images: 3,
      evaluated_regions: 3,
      base: { ap50: 0.6, ap75: 0.4 },
      fine_tuned: { ap50: 0.62, ap75: 0.41 },
      chosen_step: 40,
      evidence,
    };
    const lease = await leaseTraining(job_id as string);
    await runTraining(lease, { steps: 40, seconds: 60, metrics: noisy });
    const model = await json(await call(`/models/${lease.output.model_id}`, { key: org.key }));
    expect(model.description).toMatch(/^Unverified: fine-tuned from .* scoring above it by what could be noise; compare the two before relying on it$/);
    const page = await (await dashboardCall(await signIn(org), "/models")).text();
    const ownModels = page.slice(page.indexOf('id="own-models"'), page.indexOf("Start a training"));
    expect(ownModels).toContain("unverified: AP@0.5 0.620 (base 0.600), could be noise");
    expect(page).toContain("Unverified: AP@0.5 0.620 against 0.600 on 3 held-out regions of 3 images (60 objects)");
  });

  it("the training form starts from the public model recommended for the images' modality, and says why", async () => {
    const org = await createOrg();
    const { predicted } = await predictedImage(org);
    // The service read stained histology when it segmented the image.
    await env.DB.prepare("UPDATE segmentations SET modality = 'histology', modality_source = 'detected' WHERE id = ?").bind(predicted).run();
    const page = await (await dashboardCall(await signIn(org), "/models")).text();
    expect(page).toMatch(/<option value="cpsam-histology" selected[^>]*>/);
    expect(page).toContain("cpsam-histology: recommended for histology, the modality the service read in the image");
  });

  it("a runner's result without metrics leaves them null rather than inventing figures", async () => {
    const org = await createOrg();
    const { imageId } = await predictedImage(org);
    const { job_id } = await json(await train(org, { image_ids: [imageId] }));
    const lease = await leaseTraining(job_id as string);
    await runTraining(lease, { steps: 5 });
    expect((await json(await call(`/job/${job_id}`, { key: org.key }))).metrics).toBeNull();
    expect((await json(await call(`/models/${lease.output.model_id}`, { key: org.key }))).training).toMatchObject({ steps: 5, seconds: null, metrics: null });
  });
});

describe("DELETE /models/{model_id}", () => {
  async function trainedModel(org: TestOrg): Promise<string> {
    const { imageId } = await predictedImage(org);
    const { job_id } = await json(await train(org, { image_ids: [imageId] }));
    const lease = await leaseTraining(job_id as string);
    await runTraining(lease);
    return lease.output.model_id;
  }

  it("removes a custom model and its files", async () => {
    const org = await createOrg();
    const modelId = await trainedModel(org);
    expect((await env.BUCKET.list({ prefix: `models/${modelId}/` })).objects).toHaveLength(2);
    const deleted = await call(`/models/${modelId}`, { key: org.key, method: "DELETE" });
    expect(deleted.status).toBe(204);
    expect((await call(`/models/${modelId}`, { key: org.key })).status).toBe(404);
    expect((await env.BUCKET.list({ prefix: `models/${modelId}/` })).objects).toHaveLength(0);
    expect((await json<{ id: string }[]>(await call("/models", { key: org.key }))).map((m) => m.id)).not.toContain(modelId);
  });

  it("answers 404 for a public model and for another organization's, exactly like a missing one", async () => {
    const org = await createOrg();
    const modelId = await trainedModel(org);
    const other = await createOrg();
    for (const [key, id] of [
      [org.key, "cpsam"],
      [other.key, modelId],
      [org.key, "no-such-model"],
    ]) {
      const refused = await call(`/models/${id}`, { key, method: "DELETE" });
      expect(refused.status).toBe(404);
      expect(await json(refused)).toEqual({ detail: `Model with id ${id} not found` });
    }
    expect((await call(`/models/${modelId}`, { key: org.key })).status).toBe(200);
  });

  it("answers 409 while a job uses the model, and deletes it once that job is done", async () => {
    const org = await createOrg();
    const modelId = await trainedModel(org);
    const image = await uploadImage(org);
    const { prediction_id } = await json(await call("/predict", { key: org.key, json: { image_id: image.id, model_id: modelId } }));
    const busy = await call(`/models/${modelId}`, { key: org.key, method: "DELETE" });
    expect(busy.status).toBe(409);
    expect((await json(busy)).detail).toBe(`Model ${modelId} is used by job ${prediction_id}; delete it when that job finishes`);
    expect((await env.BUCKET.list({ prefix: `models/${modelId}/` })).objects).toHaveLength(2);

    await completePrediction(prediction_id as string);
    expect((await call(`/models/${modelId}`, { key: org.key, method: "DELETE" })).status).toBe(204);
  });
});
