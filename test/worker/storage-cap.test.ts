// The image storage cap counts what an organization stores: every image record and every imported
// segmentation (POST /segmentation), from creation until deletion. Predicted segmentations are the
// analysis cap's. At the cap, an upload and an import are both refused with 402 and leave nothing.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, createOrg, json, multipartFile, pngBytes, type TestOrg, uploadImage, ONE_SQUARE_GEOJSON } from "./helpers.ts";
import { dashboardCall, signIn } from "./dashboard-helpers.ts";
import { completePrediction } from "./runner-helpers.ts";

function importInto(org: TestOrg, imageId: string): Promise<Response> {
  const form = new FormData();
  form.append("image_id", imageId);
  form.append("file", new File([ONE_SQUARE_GEOJSON], "cells.geojson"));
  return call("/segmentation", { key: org.key, body: form });
}

async function artifactsOf(org: TestOrg): Promise<number> {
  return (await env.BUCKET.list({ prefix: `orgs/${org.id}/segmentations/` })).objects.length;
}

const REFUSAL = {
  detail: expect.stringMatching(
    /^Image storage limit reached: the free plan stores at most \d+ images and imported segmentations together; delete some first$/,
  ),
};

describe("the storage cap", () => {
  it("counts an imported segmentation like an image: at the cap an import is refused with 402 and stores nothing", async () => {
    const org = await createOrg({ storageCap: 2 });
    const image = await uploadImage(org);
    expect((await importInto(org, image.id)).status).toBe(201);
    expect(await artifactsOf(org)).toBe(1);

    const refused = await importInto(org, image.id);
    expect(refused.status).toBe(402);
    expect(await json(refused)).toEqual(REFUSAL);
    expect(await artifactsOf(org)).toBe(1);
    const rows = await env.DB.prepare("SELECT count(*) AS n FROM segmentations WHERE org_id = ?1").bind(org.id).first<{ n: number }>();
    expect(rows?.n).toBe(1);
  });

  it("refuses an upload while imports fill it, and deleting an import frees its slot", async () => {
    const org = await createOrg({ storageCap: 2 });
    const image = await uploadImage(org);
    const { segmentation_id } = await json<{ segmentation_id: string }>(await importInto(org, image.id));
    const upload = await call("/upload", { key: org.key, body: multipartFile("more.png", pngBytes()) });
    expect(upload.status).toBe(402);
    expect(await json(upload)).toEqual(REFUSAL);

    expect((await call(`/segmentation/${segmentation_id}`, { key: org.key, method: "DELETE" })).status).toBe(204);
    expect((await importInto(org, image.id)).status).toBe(201);
  });

  it("holds against concurrent imports: exactly the free slots are filled, the others refused with nothing left behind", async () => {
    const org = await createOrg({ storageCap: 3 });
    const image = await uploadImage(org);
    const statuses = (await Promise.all(Array.from({ length: 6 }, () => importInto(org, image.id)))).map((r) => r.status).sort();
    expect(statuses).toEqual([201, 201, 402, 402, 402, 402]);
    expect(await artifactsOf(org)).toBe(2);
  });

  it("does not count predicted segmentations, and the dashboard shows images and imports together against it", async () => {
    const org = await createOrg({ storageCap: 3 });
    const image = await uploadImage(org);
    const { prediction_id } = await json<{ prediction_id: string }>(await call("/predict", { key: org.key, json: { image_id: image.id, model_id: "cpsam" } }));
    await completePrediction(prediction_id);
    expect((await importInto(org, image.id)).status).toBe(201);

    const session = await signIn(org);
    expect(await json(await dashboardCall(session, "/api/usage"))).toMatchObject({
      storage: { used: 2, cap: 3, images: 1, imported_segmentations: 1 },
      analyses_this_month: { used: 1 },
    });
    expect(await (await dashboardCall(session, "")).text()).toMatch(/Images and imports stored<\/span><strong>2 \/ 3<\/strong>/);
  });
});
