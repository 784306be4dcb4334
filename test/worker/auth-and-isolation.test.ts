import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { revokeKey } from "../../worker/operator/keys.ts";
import { database } from "../../worker/storage/database.ts";
import { call, createOrg, json, RUNNER_TOKEN, type TestOrg, uploadImage } from "./helpers.ts";

describe("authentication", () => {
  it("answers 401 {detail: 'Requires authentication'} without a key or with an unknown one", async () => {
    for (const key of [null, "csk_not-a-real-key"]) {
      const response = await call("/models", { key });
      expect(response.status).toBe(401);
      expect(await json(response)).toEqual({ detail: "Requires authentication" });
    }
  });

  it("tells a missing key from a refused one in WWW-Authenticate (RFC 6750), a revoked key alike an unknown one", async () => {
    const missing = await call("/models", { key: null });
    expect(missing.headers.get("WWW-Authenticate")).toBe('Bearer realm="cellseg", error_description="No API key was sent: send Authorization: Bearer <key>"');
    const org = await createOrg();
    const { id } = (await env.DB.prepare("SELECT id FROM api_keys WHERE org_id = ?").bind(org.id).first<{ id: string }>())!;
    await revokeKey(database(env.DB), id);
    const answers = await Promise.all(
      ["csk_not-a-real-key", org.key].map(async (key) => {
        const response = await call("/models", { key });
        return { status: response.status, authenticate: response.headers.get("WWW-Authenticate"), body: await json(response) };
      }),
    );
    expect(answers[0]).toEqual({
      status: 401,
      authenticate: 'Bearer realm="cellseg", error="invalid_token", error_description="The API key was not accepted"',
      body: { detail: "Requires authentication" },
    });
    expect(answers[1]).toEqual(answers[0]);
  });

  it("points a person at the service's root to the dashboard and the API reference", async () => {
    const asJson = await call("http://localhost/");
    expect(asJson.status).toBe(200);
    expect(await asJson.json()).toEqual({
      service: "cell segmentation",
      dashboard: "/dashboard",
      api: "/api/v1",
      api_docs: "/api/v1/docs",
      openapi: "/api/v1/openapi.json",
    });
    const page = await call("http://localhost/", { headers: { Accept: "text/html" } });
    const html = await page.text();
    expect(html).toContain('<a href="/dashboard">Dashboard</a>');
    expect(html).toContain('<a href="/api/v1/docs">API reference</a>');
  });

  it("refuses a revoked key", async () => {
    const org = await createOrg();
    expect((await call("/models", { key: org.key })).status).toBe(200);
    const { id } = (await env.DB.prepare("SELECT id FROM api_keys WHERE org_id = ?").bind(org.id).first<{ id: string }>())!;
    await revokeKey(database(env.DB), id);
    expect((await call("/models", { key: org.key })).status).toBe(401);
  });

  it("stores only a SHA-256 of the key", async () => {
    const org = await createOrg();
    const row = await env.DB.prepare("SELECT key_hash, prefix FROM api_keys WHERE org_id = ?").bind(org.id).first<{ key_hash: string; prefix: string }>();
    expect(row!.key_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(row!.key_hash).not.toContain(org.key.slice(4));
    expect(org.key.startsWith(row!.prefix)).toBe(true);
  });

  it("gives an organization key 403 on the internal API and a runner token 403 on the public API", async () => {
    const org = await createOrg();
    const internal = await call("/internal/jobs/lease", { key: org.key, json: { runner_id: "r" } });
    expect(internal.status).toBe(403);
    expect((await json(internal)).detail).toMatch(/internal API/);
    expect((await call("/models", { key: RUNNER_TOKEN })).status).toBe(403);
    expect((await call("/internal/jobs/lease", { json: { runner_id: "r" } })).status).toBe(401);
    expect((await call("/internal/jobs/lease", { key: "wrong", json: { runner_id: "r" } })).status).toBe(401);
  });

  it("answers unknown routes with a JSON 404", async () => {
    const org = await createOrg();
    const response = await call("/no/such/route", { key: org.key });
    expect(response.status).toBe(404);
    expect(await json(response)).toEqual({ detail: "Not Found" });
  });
});

describe("organization isolation: another organization's resource is answered like a missing one", () => {
  let owner: TestOrg;
  let stranger: TestOrg;
  let imageId: string;
  let predictionId: string;
  let segmentationId: string;

  beforeAll(async () => {
    owner = await createOrg();
    stranger = await createOrg();
    imageId = (await uploadImage(owner)).id;
    predictionId = (await json(await call("/predict", { key: owner.key, json: { image_id: imageId, model_id: "cpsam" } }))).prediction_id as string;
    // A segmentation of the owner's, recorded as a runner would leave it.
    segmentationId = crypto.randomUUID();
    await env.DB.prepare(
      "INSERT INTO segmentations (id, org_id, image_id, image_name, source, roi_count, confluency, width, height, artifact_key, created_at) VALUES (?, ?, ?, 'cells.png', 'model', 0, 0, 8, 6, 'x', 0)",
    )
      .bind(segmentationId, owner.id, imageId)
      .run();
    await env.DB.prepare(
      "INSERT INTO models (id, org_id, name, version, r2_prefix, created_at) VALUES ('private-model', ?, 'mine', '1', 'models/private-model/1/', 0)",
    )
      .bind(owner.id)
      .run();
  });

  const cases: [string, () => [string, string, unknown?], string][] = [
    ["GET /upload/{id}", () => ["GET", `/upload/${imageId}`], "Upload"],
    ["DELETE /upload/{id}", () => ["DELETE", `/upload/${imageId}`], "Upload"],
    ["POST /upload/{id}/complete", () => ["POST", `/upload/${imageId}/complete`], "Upload"],
    ["POST /upload/{id}/abort", () => ["POST", `/upload/${imageId}/abort`], "Upload"],
    ["GET /image/{id}", () => ["GET", `/image/${imageId}`], "Image"],
    ["DELETE /image/{id}", () => ["DELETE", `/image/${imageId}`], "Image"],
    ["POST /predict with its image", () => ["POST", "/predict", { image_id: imageId, model_id: "cpsam" }], "Image"],
    ["POST /predict with its model", () => ["POST", "/predict", { image_id: "*", model_id: "private-model" }], "Model"],
    ["GET /predict/{id}", () => ["GET", `/predict/${predictionId}`], "Prediction"],
    ["POST /job/prediction with its image", () => ["POST", "/job/prediction", { image_id: imageId, model_id: "cpsam" }], "Image"],
    ["GET /job/{id}", () => ["GET", `/job/${predictionId}`], "Job"],
    ["POST /job/training with its model", () => ["POST", "/job/training", { model_id: "private-model", image_ids: ["*"] }], "Model"],
    ["POST /job/training with its image", () => ["POST", "/job/training", { model_id: "cpsam", image_ids: [imageId] }], "Image"],
    ["GET /segmentation/{id}", () => ["GET", `/segmentation/${segmentationId}`], "Segmentation"],
    ["GET /models/{id}", () => ["GET", "/models/private-model"], "Model"],
    ["DELETE /segmentation/{id}", () => ["DELETE", `/segmentation/${segmentationId}`], "Segmentation"],
  ];

  for (const [name, request, resource] of cases) {
    it(name, async () => {
      let [method, path, body] = request();
      if (body && typeof body === "object" && "image_id" in body && body.image_id === "*") body = { ...body, image_id: (await uploadImage(stranger)).id };
      if (body && typeof body === "object" && "image_ids" in body && (body.image_ids as string[])[0] === "*")
        body = { ...body, image_ids: [(await uploadImage(stranger)).id] };
      const foreign = await call(path, { key: stranger.key, method, json: body });
      expect(foreign.status).toBe(404);
      const { detail } = await json(foreign);
      expect(detail).toMatch(new RegExp(`^${resource} with id \\S+ not found$`));
      // Exactly the answer for an id that does not exist at all.
      const missingId = crypto.randomUUID();
      const foreignId = resource === "Model" ? /private-model/ : /[0-9a-f-]{36}/;
      const missingPath = path.replace(foreignId, missingId);
      const missingBody = body && JSON.parse(JSON.stringify(body).replace(foreignId, missingId));
      const missing = await call(missingPath, { key: stranger.key, method, json: missingBody });
      expect(missing.status).toBe(404);
      expect((await json(missing)).detail).toBe(String(detail).replace(/with id \S+/, `with id ${missingId}`));
    });
  }

  it("GET /models lists public models and the caller's own, never another organization's", async () => {
    const mine = await json<{ id: string; is_public: boolean }[]>(await call("/models", { key: owner.key }));
    const theirs = await json<{ id: string }[]>(await call("/models", { key: stranger.key }));
    expect(mine.map((m) => m.id)).toEqual(expect.arrayContaining(["cpsam", "private-model"]));
    expect(mine.find((m) => m.id === "cpsam")!.is_public).toBe(true);
    expect(theirs.map((m) => m.id)).toContain("cpsam");
    expect(theirs.map((m) => m.id)).not.toContain("private-model");
  });
});
