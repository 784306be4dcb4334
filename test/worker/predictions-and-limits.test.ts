import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, createOrg, json, multipartFile, pngBytes, uploadImage } from "./helpers.ts";

const predict = (key: string, body: unknown) => call("/predict", { key, json: body });

describe("POST /predict and GET /predict/{id}", () => {
  it("queues a prediction and reports it SUBMITTED with progress and stage", async () => {
    const org = await createOrg();
    const image = await uploadImage(org);
    const submitted = await predict(org.key, { image_id: image.id, model_id: "cpsam" });
    expect(submitted.status).toBe(202);
    const { prediction_id, status } = await json(submitted);
    expect(status).toBe("SUBMITTED");
    const view = await json(await call(`/predict/${prediction_id}`, { key: org.key }));
    expect(view).toMatchObject({
      prediction_id,
      status: "SUBMITTED",
      image_id: image.id,
      model_id: "cpsam",
      progress: 0,
      stage: "queued",
      segmentation_id: null,
      cell_count: null,
    });
    // The same job through the job vocabulary.
    expect(await json(await call(`/job/${prediction_id}`, { key: org.key }))).toMatchObject({
      job_id: prediction_id,
      kind: "prediction",
      status: "SUBMITTED",
      task_id: prediction_id,
    });
  });

  it("answers an identical queued prediction 'skipped' with the existing id, and any other with 400", async () => {
    const org = await createOrg();
    const a = await uploadImage(org, "a.png");
    const b = await uploadImage(org, "b.png");
    const first = await json(await predict(org.key, { image_id: a.id, model_id: "cpsam" }));
    const again = await predict(org.key, { image_id: a.id, model_id: "cpsam" });
    expect(again.status).toBe(200);
    expect(await json(again)).toEqual({ prediction_id: first.prediction_id, status: "skipped" });
    const other = await predict(org.key, { image_id: b.id, model_id: "cpsam" });
    expect(other.status).toBe(400);
    expect((await json(other)).detail).toMatch(/already queued/);
    const viaJob = await call("/job/prediction", { key: org.key, json: { image_id: a.id, model_id: "cpsam" } });
    expect(await json(viaJob)).toMatchObject({ job_id: first.prediction_id, status: "skipped", task_id: first.prediction_id });
  });

  it("refuses an image that is not ready with 409", async () => {
    const org = await createOrg();
    const pending = await json<{ image: { id: string } }>(await call("/upload", { key: org.key, json: { name: "p.tif", size: 10 } }));
    const response = await predict(org.key, { image_id: pending.image.id, model_id: "cpsam" });
    expect(response.status).toBe(409);
    expect((await json(response)).detail).toMatch(/pending, not ready/);
  });

  it("validates the body in the 422 shape", async () => {
    const org = await createOrg();
    const response = await predict(org.key, { image_id: 5, params: { diameter: -3, channels: [1, 2, 3], modality: "phase-contrast" } });
    expect(response.status).toBe(422);
    const { detail } = await json<{ detail: { loc: (string | number)[]; type: string }[] }>(response);
    expect(detail.map((d) => d.loc)).toEqual(
      expect.arrayContaining([
        ["body", "image_id"],
        ["body", "model_id"],
        ["body", "params", "diameter"],
        ["body", "params", "channels"],
        ["body", "params", "modality"],
      ]),
    );
    expect(detail.find((d) => d.loc[1] === "model_id")!.type).toBe("missing");
    const broken = await call("/predict", { key: org.key, body: "{not json", headers: { "Content-Type": "application/json" } });
    expect(broken.status).toBe(422);
  });

  it("answers 20 simultaneous submits with at most one run", async () => {
    const org = await createOrg();
    const images: { id: string }[] = [];
    for (let i = 0; i < 4; i++) images.push(await uploadImage(org, `${i}.png`));
    const responses = await Promise.all(Array.from({ length: 20 }, (_, i) => predict(org.key, { image_id: images[i % 4]!.id, model_id: "cpsam" })));
    const bodies = await Promise.all(responses.map((r) => json(r)));
    const created = responses.filter((r) => r.status === 202);
    expect(created).toHaveLength(1);
    expect(responses.every((r) => [200, 202, 400].includes(r.status))).toBe(true);
    const runs = await env.DB.prepare("SELECT count(*) AS n FROM jobs WHERE org_id = ? AND kind = 'prediction'").bind(org.id).first<{ n: number }>();
    expect(runs!.n).toBe(1);
    // One response was created (checked above), and bodies runs parallel to responses.
    const runId = bodies[responses.findIndex((r) => r.status === 202)]!.prediction_id;
    for (const [i, r] of responses.entries()) if (r.status === 200) expect(bodies[i]!.prediction_id).toBe(runId);
  });
});

describe("plan limits", () => {
  it("refuses an upload past the storage cap with 402, and simultaneous uploads never pass it", async () => {
    const org = await createOrg({ storageCap: 3 });
    const responses = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        i % 2
          ? call("/upload", { key: org.key, json: { name: `${i}.tif`, size: 1000 } })
          : call("/upload", { key: org.key, body: multipartFile(`${i}.png`, pngBytes()) }),
      ),
    );
    expect(responses.filter((r) => r.status === 201)).toHaveLength(3);
    expect(responses.filter((r) => r.status === 402)).toHaveLength(5);
    expect((await json(responses.find((r) => r.status === 402)!)).detail).toMatch(/storage limit/);
    const rows = await env.DB.prepare("SELECT count(*) AS n FROM images WHERE org_id = ?").bind(org.id).first<{ n: number }>();
    expect(rows!.n).toBe(3);
    const stored = await env.BUCKET.list({ prefix: `orgs/${org.id}/` });
    expect(stored.objects.length).toBeLessThanOrEqual(3);
  });

  it("refuses predictions past the monthly analysis cap with 402", async () => {
    const org = await createOrg({ analysisCap: 1 });
    const image = await uploadImage(org);
    const first = await json(await predict(org.key, { image_id: image.id, model_id: "cpsam" }));
    // Finish the first so the one-active rule does not answer instead of the cap.
    await env.DB.prepare("UPDATE jobs SET status = 'COMPLETED' WHERE id = ?").bind(first.prediction_id).run();
    const second = await predict(org.key, { image_id: image.id, model_id: "cpsam" });
    expect(second.status).toBe(402);
    expect((await json(second)).detail).toMatch(/Monthly analysis limit reached: 1 of 1/);
  });
});

describe("POST /job/training", () => {
  it("needs a visible base model, the caller's own ready images, and a segmentation of each", async () => {
    const org = await createOrg();
    const image = await uploadImage(org);
    const unlabelled = await call("/job/training", { key: org.key, json: { model_id: "cpsam", image_ids: [image.id] } });
    expect(unlabelled.status).toBe(409);
    expect((await json(unlabelled)).detail).toMatch(/no segmentation/);

    await env.DB.prepare(
      "INSERT INTO segmentations (id, org_id, image_id, image_name, source, roi_count, confluency, width, height, artifact_key, created_at) VALUES (?, ?, ?, 'cells.png', 'model', 3, 0.1, 8, 6, 'k', 0)",
    )
      .bind(crypto.randomUUID(), org.id, image.id)
      .run();
    const submitted = await call("/job/training", { key: org.key, json: { model_id: "cpsam", image_ids: [image.id] } });
    expect(submitted.status).toBe(202);
    const job = await json(submitted);
    expect(job).toMatchObject({ status: "submitted", reason: expect.stringMatching(/queued/), task_id: job.job_id, worker_job_id: job.job_id });
    const again = await json(await call("/job/training", { key: org.key, json: { model_id: "cpsam", image_ids: [image.id] } }));
    expect(again).toMatchObject({ job_id: job.job_id, status: "skipped" });
    expect(await json(await call(`/job/${job.job_id}`, { key: org.key }))).toMatchObject({ kind: "training", image_ids: [image.id], model_id: "cpsam" });
  });
});
