// Finding one's things again: listings page newest first with an opaque cursor, filter by status,
// and never show another organization's records.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, createOrg, json, type TestOrg, uploadImage } from "./helpers.ts";
import { completePrediction } from "./runner-helpers.ts";

interface Page<T = Record<string, unknown>> {
  items: T[];
  next_cursor: string | null;
}

async function list<T = Record<string, unknown>>(org: TestOrg, path: string): Promise<Page<T>> {
  const response = await call(path, { key: org.key });
  expect(response.status).toBe(200);
  return json<Page<T>>(response);
}

/** Follows next_cursor to the end, returning every id in the order served. */
async function walk(org: TestOrg, path: string, limit: number): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  const join = path.includes("?") ? "&" : "?";
  do {
    const page: Page<{ id?: string; prediction_id?: string; job_id?: string }> = await list(
      org,
      `${path}${join}limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
    );
    expect(page.items.length).toBeLessThanOrEqual(limit);
    ids.push(...page.items.map((item) => (item.id ?? item.prediction_id ?? item.job_id)!));
    cursor = page.next_cursor;
  } while (cursor);
  return ids;
}

async function addSegmentation(org: TestOrg, imageId: string, createdAt: number): Promise<string> {
  const id = crypto.randomUUID();
  await env.DB.prepare(
    "INSERT INTO segmentations (id, org_id, image_id, image_name, source, roi_count, confluency, width, height, artifact_key, created_at) VALUES (?, ?, ?, 'cells.png', 'model', 2, 0.1, 8, 6, 'k', ?)",
  )
    .bind(id, org.id, imageId, createdAt)
    .run();
  return id;
}

const predict = async (org: TestOrg, imageId: string) =>
  (await json(await call("/predict", { key: org.key, json: { image_id: imageId, model_id: "cpsam" } }))).prediction_id as string;

describe("GET /images", () => {
  it("pages newest first, id breaking ties, with no item skipped or repeated across pages", async () => {
    const org = await createOrg();
    const uploaded: string[] = [];
    for (let i = 0; i < 5; i++) uploaded.push((await uploadImage(org, `${i}.png`)).id);
    // Three of them created in the same millisecond: the id alone decides their order.
    await env.DB.prepare("UPDATE images SET created_at = 1700000000000 WHERE id IN (?, ?, ?)").bind(uploaded[1], uploaded[2], uploaded[3]).run();
    await env.DB.prepare("UPDATE images SET created_at = 1800000000000 WHERE id = ?").bind(uploaded[4]).run();
    await env.DB.prepare("UPDATE images SET created_at = 1600000000000 WHERE id = ?").bind(uploaded[0]).run();

    const expected = [uploaded[4], ...[uploaded[1], uploaded[2], uploaded[3]].sort().reverse(), uploaded[0]];
    for (const limit of [1, 2, 3, 5, 200]) expect(await walk(org, "/images", limit)).toEqual(expected);
    const first = await list(org, "/images?limit=5");
    expect(first.next_cursor).toBeNull();
    expect(first.items[0]).toMatchObject({ id: uploaded[4], name: "4.png", upload_status: "ready" });
  });

  it("filters by upload_status", async () => {
    const org = await createOrg();
    const ready = await uploadImage(org);
    const pending = (await json<{ image: { id: string } }>(await call("/upload", { key: org.key, json: { name: "later.tif", size: 100 } }))).image;
    expect((await list(org, "/images?upload_status=pending")).items.map((i) => i.id)).toEqual([pending.id]);
    expect((await list(org, "/images?upload_status=ready")).items.map((i) => i.id)).toEqual([ready.id]);
    expect((await list(org, "/images")).items).toHaveLength(2);
  });

  it("answers a bad limit, status or cursor with 422 in the validation shape", async () => {
    const org = await createOrg();
    for (const [query, field] of [
      ["limit=0", "limit"],
      ["limit=201", "limit"],
      ["limit=many", "limit"],
      ["upload_status=done", "upload_status"],
      ["cursor=not-a-cursor", "cursor"],
    ]) {
      const response = await call(`/images?${query}`, { key: org.key });
      expect(response.status).toBe(422);
      const { detail } = await json<{ detail: { loc: string[] }[] }>(response);
      expect(detail.map((d) => d.loc)).toEqual([["query", field]]);
    }
  });
});

describe("GET /segmentations", () => {
  it("lists the organization's segmentations, or one image's with image_id, newest first", async () => {
    const org = await createOrg();
    const a = await uploadImage(org, "a.png");
    const b = await uploadImage(org, "b.png");
    const a1 = await addSegmentation(org, a.id, 1000);
    const a2 = await addSegmentation(org, a.id, 3000);
    const b1 = await addSegmentation(org, b.id, 2000);
    expect(await walk(org, "/segmentations", 2)).toEqual([a2, b1, a1]);
    expect(await walk(org, `/segmentations?image_id=${a.id}`, 1)).toEqual([a2, a1]);
    expect((await list(org, `/segmentations?image_id=${b.id}`)).items[0]).toMatchObject({ id: b1, image_id: b.id, cell_count: 2 });
  });
});

describe("GET /predictions and GET /jobs", () => {
  it("lists predictions newest first and filters them by status and image", async () => {
    const org = await createOrg();
    const a = await uploadImage(org, "a.png");
    const b = await uploadImage(org, "b.png");
    const first = await predict(org, a.id);
    await completePrediction(first, 4);
    const second = await predict(org, b.id);

    const all = await list(org, "/predictions");
    expect(all.items.map((p) => p.prediction_id)).toEqual([second, first]);
    expect(all.items[1]).toMatchObject({ status: "COMPLETED", cell_count: 4, image_id: a.id });
    expect((await list(org, "/predictions?status=COMPLETED")).items.map((p) => p.prediction_id)).toEqual([first]);
    expect((await list(org, "/predictions?status=SUBMITTED")).items.map((p) => p.prediction_id)).toEqual([second]);
    expect((await list(org, `/predictions?image_id=${b.id}`)).items.map((p) => p.prediction_id)).toEqual([second]);
    expect(await walk(org, "/predictions", 1)).toEqual([second, first]);
  });

  it("GET /jobs lists predictions and trainings (kind filters them), never an upload's conversion", async () => {
    const org = await createOrg();
    const image = await uploadImage(org);
    await addSegmentation(org, image.id, 1);
    const prediction = await predict(org, image.id);
    const training = (await json(await call("/job/training", { key: org.key, json: { model_id: "cpsam", image_ids: [image.id] } }))).job_id as string;
    // A resumable upload completed: its conversion job is the upload's business, not a listed job.
    const { image: pending, upload } = await json<{ image: { id: string }; upload: { urls: { url: string }[] } }>(
      await call("/upload", { key: org.key, json: { name: "x.png", size: 4 } }),
    );
    // A 4-byte upload is one part.
    await call(upload.urls[0]!.url, { method: "PUT", body: new Uint8Array(4), headers: { "Content-Length": "4" } });
    expect((await call(`/upload/${pending.id}/complete`, { key: org.key, method: "POST" })).status).toBe(202);

    expect((await list(org, "/jobs")).items.map((j) => j.job_id)).toEqual([training, prediction]);
    expect((await list(org, "/jobs?kind=training")).items).toEqual([expect.objectContaining({ job_id: training, kind: "training", status: "SUBMITTED" })]);
    expect((await list(org, "/jobs?kind=prediction&status=SUBMITTED")).items.map((j) => j.job_id)).toEqual([prediction]);
    expect((await list(org, "/jobs?status=COMPLETED")).items).toEqual([]);
    expect((await call("/jobs?kind=conversion", { key: org.key })).status).toBe(422);
  });
});

describe("GET /models", () => {
  it("lists the three public models, each with the modalities it is the one to use for and what it is for", async () => {
    const org = await createOrg();
    const models = await json<{ id: string; is_public: boolean; version: string; recommended_for: string[]; description: string }[]>(
      await call("/models", { key: org.key }),
    );
    const shared = models.filter((m) => m.is_public);
    expect(Object.fromEntries(shared.map((m) => [m.id, m.recommended_for]))).toEqual({
      cpsam: ["fluorescence"],
      "cpsam-large": ["brightfield"],
      "cpsam-histology": ["histology"],
    });
    const histology = shared.find((m) => m.id === "cpsam-histology")!;
    expect(histology.version).toBe("1");
    // Each description is its manifest's, figures left to docs/models.md.
    expect(histology.description).toMatch(/^For stained histology \(H&E and the like\).* measured: docs\/models\.md\.$/);
    // cpsam-large no longer claims stained histology, and says which model is better there.
    expect(shared.find((m) => m.id === "cpsam-large")!.description).toMatch(/^For brightfield: .*on stained histology cpsam-histology is better/);
    for (const model of shared) expect(model.description).not.toMatch(/AP@|0\.\d{3}/);
  });
});

describe("GET /models/{id}", () => {
  it("answers a public model and the organization's own", async () => {
    const org = await createOrg();
    await env.DB.prepare("INSERT INTO models (id, org_id, name, version, r2_prefix, created_at) VALUES (?, ?, 'mine', '1', 'models/x/1/', 0)")
      .bind(`m-${org.id}`, org.id)
      .run();
    expect(await json(await call("/models/cpsam", { key: org.key }))).toMatchObject({ id: "cpsam", name: "cpsam", is_public: true });
    expect(await json(await call(`/models/m-${org.id}`, { key: org.key }))).toMatchObject({
      id: `m-${org.id}`,
      name: "mine",
      is_public: false,
      description: "",
      recommended_for: [],
    });
  });

  it("says which modalities each public model is the one to use for", async () => {
    const org = await createOrg();
    const recommended = async (id: string) => ((await json(await call(`/models/${id}`, { key: org.key }))) as { recommended_for: string[] }).recommended_for;
    expect(await recommended("cpsam")).toEqual(["fluorescence"]);
    expect(await recommended("cpsam-large")).toEqual(["brightfield"]);
    expect(await recommended("cpsam-histology")).toEqual(["histology"]);
  });
});

describe("listings are confined to the caller's organization", () => {
  it("shows nothing of another organization's, even given its image id or a cursor taken from its listing", async () => {
    const owner = await createOrg();
    const stranger = await createOrg();
    const image = await uploadImage(owner);
    await addSegmentation(owner, image.id, 5);
    await uploadImage(owner, "second.png");
    await predict(owner, image.id);
    const ownerPage = await list(owner, "/images?limit=1");
    expect(ownerPage.next_cursor).not.toBeNull();

    for (const path of [
      "/images",
      `/images?cursor=${ownerPage.next_cursor}`,
      "/segmentations",
      `/segmentations?image_id=${image.id}`,
      "/predictions",
      `/predictions?image_id=${image.id}`,
      "/jobs",
    ]) {
      expect(await list(stranger, path)).toEqual({ items: [], next_cursor: null });
    }
    // The owner sees them all.
    expect((await list(owner, `/segmentations?image_id=${image.id}`)).items).toHaveLength(1);
    expect((await list(owner, "/predictions")).items).toHaveLength(1);
  });

  it("needs an API key like every other route", async () => {
    for (const path of ["/images", "/segmentations", "/predictions", "/jobs", "/models/cpsam"]) {
      expect((await call(path)).status).toBe(401);
    }
  });
});
