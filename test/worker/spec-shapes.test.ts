// The API contract's resource tables, field by field: a client written against the spec's names
// (and nothing else) must find every field where the spec puts it. Extra fields are allowed.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, createOrg, json, multipartFile, pngBytes, type TestOrg, uploadImage } from "./helpers.ts";
import { completePrediction } from "./runner-helpers.ts";

type Body = Record<string, unknown>;
const isoDateTime = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

async function predict(org: TestOrg, body: Body): Promise<Response> {
  return call("/predict", { key: org.key, json: body });
}

/** Lets the organization submit again (one prediction at a time) without running the last one. */
async function finishActive(org: TestOrg) {
  await env.DB.prepare("UPDATE jobs SET status = 'FAILED' WHERE org_id = ? AND status IN ('SUBMITTED', 'STARTED')").bind(org.id).run();
}

describe("Image", () => {
  it("POST /upload (one-call form) answers 201 {image} with id, name from the file, upload_status ready and upload_error", async () => {
    const org = await createOrg();
    const response = await call("/upload", { key: org.key, body: multipartFile("well B2.png", pngBytes()) });
    expect(response.status).toBe(201);
    const body = await json(response);
    const image = body.image as Body;
    expect(image).toEqual(expect.objectContaining({ id: expect.any(String), name: "well B2.png", upload_status: "ready" }));
    expect(image).toHaveProperty("upload_error");
  });

  it("POST /upload (resumable form) answers image (with id) and upload.part_size and upload.urls[].url", async () => {
    const org = await createOrg();
    const response = await call("/upload", { key: org.key, json: { name: "plate.tif", size: 20 * 1024 * 1024 } });
    expect(response.status).toBe(201);
    const { image, upload } = await json<{ image: Body; upload: { part_size: number; urls: { url: string }[] } }>(response);
    expect(image).toMatchObject({ id: expect.any(String), name: "plate.tif", upload_status: expect.any(String) });
    expect(Number.isInteger(upload.part_size)).toBe(true);
    expect(upload.urls).toHaveLength(Math.ceil((20 * 1024 * 1024) / upload.part_size));
    for (const part of upload.urls) expect(part.url).toMatch(/^http/);
  });

  it("GET /upload/{image_id} answers the record with upload_status and upload_error", async () => {
    const org = await createOrg();
    const { id } = await uploadImage(org);
    const record = await json(await call(`/upload/${id}`, { key: org.key }));
    expect(record).toMatchObject({ id, name: "cells.png", upload_status: "ready", upload_error: null });
  });

  it("POST /upload/{image_id}/complete answers {status: 'processing'}", async () => {
    const org = await createOrg();
    const { image, upload } = await json<{ image: Body; upload: { urls: { url: string }[] } }>(
      await call("/upload", { key: org.key, json: { name: "tiny.png", size: pngBytes().length } }),
    );
    // A tiny upload is one part.
    const put = await call(upload.urls[0]!.url, { method: "PUT", body: pngBytes(), headers: { "Content-Length": String(pngBytes().length) } });
    expect(put.status).toBe(200);
    expect(await json(await call(`/upload/${image.id}/complete`, { key: org.key, method: "POST" }))).toMatchObject({ status: "processing" });
  });
});

describe("Model", () => {
  it("GET /models answers an array of {id, name, is_public, created_at, description}; the shared base model is cpsam", async () => {
    const org = await createOrg();
    const models = await json<Body[]>(await call("/models", { key: org.key }));
    expect(Array.isArray(models)).toBe(true);
    for (const model of models) {
      expect(model).toEqual(
        expect.objectContaining({ id: expect.any(String), name: expect.any(String), is_public: expect.any(Boolean), description: expect.any(String) }),
      );
      expect(model.created_at).toMatch(isoDateTime);
    }
    expect(models.find((m) => m.name === "cpsam")).toMatchObject({ is_public: true });
  });
});

describe("Prediction", () => {
  it("POST /predict answers prediction_id and status SUBMITTED; GET /predict/{id} adds segmentation_id and cell_count once COMPLETED", async () => {
    const org = await createOrg();
    const image = await uploadImage(org);
    const submitted = await json(await predict(org, { image_id: image.id, model_id: "cpsam" }));
    expect(submitted).toEqual({ prediction_id: expect.any(String), status: "SUBMITTED" });
    const id = submitted.prediction_id as string;
    expect(await json(await call(`/predict/${id}`, { key: org.key }))).toMatchObject({ prediction_id: id, status: "SUBMITTED" });

    const lease = await completePrediction(id, 7);
    const done = await json(await call(`/predict/${id}`, { key: org.key }));
    expect(done).toMatchObject({ prediction_id: id, status: "COMPLETED", segmentation_id: lease.output.segmentation_id, cell_count: 7 });
    expect(Number.isInteger(done.cell_count)).toBe(true);
  });

  it("an identical queued prediction answers status skipped with the existing prediction_id", async () => {
    const org = await createOrg();
    const image = await uploadImage(org);
    const first = await json(await predict(org, { image_id: image.id, model_id: "cpsam" }));
    expect(await json(await predict(org, { image_id: image.id, model_id: "cpsam" }))).toEqual({ prediction_id: first.prediction_id, status: "skipped" });
  });
});

describe("Training job acknowledgement", () => {
  it("POST /job/training answers job_id, status submitted, reason, task_id and worker_job_id, all strings", async () => {
    const org = await createOrg();
    const image = await uploadImage(org);
    await env.DB.prepare(
      "INSERT INTO segmentations (id, org_id, image_id, image_name, source, roi_count, confluency, width, height, artifact_key, created_at) VALUES (?, ?, ?, 'cells.png', 'model', 3, 0.1, 8, 6, 'k', 0)",
    )
      .bind(crypto.randomUUID(), org.id, image.id)
      .run();
    const body = { model_id: "cpsam", image_ids: [image.id] };
    const ack = await json(await call("/job/training", { key: org.key, json: body }));
    expect(ack).toEqual(
      expect.objectContaining({
        job_id: expect.any(String),
        status: "submitted",
        reason: expect.any(String),
        task_id: expect.any(String),
        worker_job_id: expect.any(String),
      }),
    );
    const again = await json(await call("/job/training", { key: org.key, json: body }));
    expect(again).toEqual(expect.objectContaining({ job_id: ack.job_id, status: "skipped", reason: expect.stringMatching(/identical/) }));
    expect(await json(await call(`/job/${ack.job_id}`, { key: org.key }))).toMatchObject({ job_id: ack.job_id, status: "SUBMITTED" });
  });

  it("POST /job/prediction acknowledges in the same shape", async () => {
    const org = await createOrg();
    const image = await uploadImage(org);
    const ack = await json(await call("/job/prediction", { key: org.key, json: { image_id: image.id, model_id: "cpsam" } }));
    expect(ack).toEqual(
      expect.objectContaining({
        job_id: expect.any(String),
        status: "submitted",
        reason: expect.any(String),
        task_id: expect.any(String),
        worker_job_id: expect.any(String),
      }),
    );
  });
});

describe("Error bodies", () => {
  it("handled errors are {detail: string}; 404 names the resource and the id", async () => {
    const org = await createOrg();
    const unauthenticated = await call("/models");
    expect(await json(unauthenticated)).toEqual({ detail: "Requires authentication" });
    const missing = await call("/predict/nope", { key: org.key });
    expect(missing.status).toBe(404);
    expect(await json(missing)).toEqual({ detail: "Prediction with id nope not found" });
  });

  it("a JSON body sent as something else is 415 {detail}", async () => {
    const org = await createOrg();
    const form = new FormData();
    form.append("image_id", "x");
    const response = await call("/predict", { key: org.key, body: form });
    expect(response.status).toBe(415);
    expect(await json(response)).toEqual({ detail: "Unsupported Media Type: send the body as application/json" });
  });

  it("a validation error is 422 {detail: [{loc, msg, type, input?}]}", async () => {
    const org = await createOrg();
    const response = await predict(org, { model_id: 7 });
    expect(response.status).toBe(422);
    const { detail } = await json<{ detail: Body[] }>(response);
    expect(detail).toEqual([
      { loc: ["body", "image_id"], msg: "Field required", type: "missing" },
      { loc: ["body", "model_id"], msg: "Input should be string, not number", type: "string_type", input: 7 },
    ]);
  });
});

describe("params.diameter", () => {
  it('0, null and "auto" all mean: estimate it (stored without a diameter, so they are one prediction)', async () => {
    const org = await createOrg();
    const image = await uploadImage(org);
    const first = await predict(org, { image_id: image.id, model_id: "cpsam", params: { diameter: 0 } });
    expect(first.status).toBe(202);
    const { prediction_id } = await json(first);
    for (const diameter of [null, "auto"]) {
      expect(await json(await predict(org, { image_id: image.id, model_id: "cpsam", params: { diameter } }))).toEqual({ prediction_id, status: "skipped" });
    }
    expect(await json(await predict(org, { image_id: image.id, model_id: "cpsam" }))).toEqual({ prediction_id, status: "skipped" });
    expect((await json(await call(`/predict/${prediction_id}`, { key: org.key }))).params).toEqual({});
  });

  it("a positive number is the diameter in pixels", async () => {
    const org = await createOrg();
    const image = await uploadImage(org);
    const { prediction_id } = await json(await predict(org, { image_id: image.id, model_id: "cpsam", params: { diameter: 30 } }));
    expect((await json(await call(`/predict/${prediction_id}`, { key: org.key }))).params).toEqual({ diameter: 30 });
    await finishActive(org);
  });

  it("a value of the wrong type is a 422 that says so, never 'Field required'", async () => {
    const org = await createOrg();
    const image = await uploadImage(org);
    for (const diameter of ["big", true, [30], { px: 30 }]) {
      const response = await predict(org, { image_id: image.id, model_id: "cpsam", params: { diameter } });
      expect(response.status).toBe(422);
      const { detail } = await json<{ detail: Body[] }>(response);
      expect(detail).toHaveLength(1);
      expect(detail[0]).toMatchObject({ loc: ["body", "params", "diameter"], type: "invalid_type", input: diameter });
      expect(detail[0]!.msg).toMatch(/^Input should be number, "auto" or null, not (string|boolean|array|object)$/);
    }
    const negative = await json<{ detail: Body[] }>(await predict(org, { image_id: image.id, model_id: "cpsam", params: { diameter: -3 } }));
    expect(negative.detail[0]).toMatchObject({ loc: ["body", "params", "diameter"], type: "greater_than_equal", ctx: { min: 0 }, input: -3 });
  });
});
