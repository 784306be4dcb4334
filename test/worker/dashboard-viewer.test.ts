// What the viewer and the image page read: the runner's preview PNG, the segmentation's page, and
// an image's predictions, each only for the organization that owns them.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { encodeRoiArtifact } from "../../schema/roi-artifact-writer.ts";
import { call, createOrg, json, pngBytes, RUNNER_TOKEN, type TestOrg, uploadImage } from "./helpers.ts";
import { dashboardCall, signIn } from "./dashboard-helpers.ts";

async function artifact(): Promise<Uint8Array> {
  const square = { index: 0, polygon: new Int32Array([1, 1, 1, 4, 4, 4, 4, 1]), area_px: 9, perimeter_px: 12, centroid_x: 2.5, centroid_y: 2.5, bbox_x: 1, bbox_y: 1, bbox_w: 3, bbox_h: 3 };
  const chunks: Uint8Array[] = [];
  for await (const chunk of encodeRoiArtifact({ imageWidth: 8, imageHeight: 6, confluency: 9 / 48, modelName: "cpsam", modelVersion: "1" }, [square])) chunks.push(chunk);
  const bytes = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) bytes.set(c, (at += c.length) - c.length);
  return bytes;
}

/** Segments an image the way a runner does, uploading the preview only when asked to. */
async function segment(org: TestOrg, withPreview: boolean): Promise<{ imageId: string; segmentationId: string; preview: Uint8Array }> {
  const image = await uploadImage(org);
  const { prediction_id } = await json(await call("/predict", { key: org.key, json: { image_id: image.id, model_id: "cpsam" } }));
  const preview = pngBytes(8, 6);
  for (;;) {
    const job = await json<{ job_id: string; lease_token: string; output: { artifact_url: string; preview_url: string } }>(
      await call("/internal/jobs/lease", { key: RUNNER_TOKEN, json: { runner_id: "viewer-test", wait_seconds: 5 } }),
    );
    const bytes = await artifact();
    await call(job.output.artifact_url, { method: "PUT", body: bytes, headers: { "Content-Length": String(bytes.length) } });
    if (withPreview) await call(job.output.preview_url, { method: "PUT", body: preview, headers: { "Content-Length": String(preview.length) } });
    await call(`/internal/jobs/${job.job_id}/complete`, { key: RUNNER_TOKEN, json: { lease_token: job.lease_token, result: { roi_count: 1, confluency: 9 / 48, width: 8, height: 6 } } });
    if (job.job_id === prediction_id) break;
  }
  const done = await json<{ segmentation_id: string }>(await call(`/predict/${prediction_id}`, { key: org.key }));
  return { imageId: image.id, segmentationId: done.segmentation_id, preview };
}

describe("the viewer's data", () => {
  it("serves the runner's preview and the segmentation's page with its cell count and the four downloads", async () => {
    const org = await createOrg();
    const { segmentationId, preview } = await segment(org, true);
    const session = await signIn(org);
    const png = await dashboardCall(session, `/api/segmentation/${segmentationId}/preview.png`);
    expect(png.status).toBe(200);
    expect(png.headers.get("Content-Type")).toBe("image/png");
    expect(new Uint8Array(await png.arrayBuffer())).toEqual(preview);
    const page = await (await dashboardCall(session, `/segmentations/${segmentationId}`)).text();
    expect(page).toMatch(/<span id="cell-count">1<\/span> cells/);
    for (const format of ["measurements.csv", "rois.geojson", "rois.zip", "masks.png"]) {
      expect(page).toContain(`href="/dashboard/api/export/${segmentationId}/${format}"`);
    }
    const geojson = await json<{ features: unknown[] }>(await dashboardCall(session, `/api/export/${segmentationId}/rois.geojson`));
    expect(geojson.features).toHaveLength(1);
  });

  it("says plainly when a segmentation has no preview", async () => {
    const org = await createOrg();
    const { segmentationId } = await segment(org, false);
    const response = await dashboardCall(await signIn(org), `/api/segmentation/${segmentationId}/preview.png`);
    expect(response.status).toBe(404);
    expect(await json(response)).toEqual({ detail: `Segmentation ${segmentationId} has no preview (segmented before previews existed); run the prediction again` });
  });

  it("lists an image's predictions and segmentations for its page", async () => {
    const org = await createOrg();
    const { imageId, segmentationId } = await segment(org, true);
    const session = await signIn(org);
    const activity = await json<{ predictions: { status: string; segmentation_id: string }[]; segmentations: { id: string; cell_count: number }[] }>(
      await dashboardCall(session, `/api/images/${imageId}/predictions`),
    );
    expect(activity.predictions).toEqual([expect.objectContaining({ status: "COMPLETED", segmentation_id: segmentationId })]);
    expect(activity.segmentations).toEqual([expect.objectContaining({ id: segmentationId, cell_count: 1 })]);
    const page = await (await dashboardCall(session, `/images/${imageId}`)).text();
    expect(page).toContain(`href="/dashboard/segmentations/${segmentationId}"`);
  });

  it("answers another organization's preview, segmentation page and predictions like missing ones", async () => {
    const { imageId, segmentationId } = await segment(await createOrg(), true);
    const stranger = await signIn(await createOrg());
    const preview = await dashboardCall(stranger, `/api/segmentation/${segmentationId}/preview.png`);
    expect(await json(preview)).toEqual({ detail: `Segmentation with id ${segmentationId} not found` });
    expect((await dashboardCall(stranger, `/segmentations/${segmentationId}`)).status).toBe(404);
    expect(await json(await dashboardCall(stranger, `/api/images/${imageId}/predictions`))).toEqual({ detail: `Image with id ${imageId} not found` });
  });
});

describe("the models page", () => {
  it("shows the public models and the organization's own with their training metrics, not another's", async () => {
    const org = await createOrg();
    const other = await createOrg();
    const insert = (id: string, orgId: string, name: string) =>
      env.DB.prepare("INSERT INTO models (id, org_id, name, version, base_model_id, r2_prefix, training, created_at) VALUES (?1, ?2, ?3, '1', 'cpsam', ?4, ?5, ?6)")
        .bind(id, orgId, name, `models/${id}/1/`, JSON.stringify({ steps: 150, image_ids: ["a", "b"], validation: { ap50_before: 0.7, ap50_after: 0.8125 } }), Date.now())
        .run();
    await insert(crypto.randomUUID(), org.id, "my-nuclei");
    await insert(crypto.randomUUID(), other.id, "their-nuclei");
    const page = await (await dashboardCall(await signIn(org), "/models")).text();
    expect(page).toContain("my-nuclei");
    expect(page).toContain("AP@0.5 0.813 (base 0.700) · 150 steps · 2 image(s)");
    expect(page).toContain("cpsam");
    expect(page).not.toContain("their-nuclei");
  });
});
