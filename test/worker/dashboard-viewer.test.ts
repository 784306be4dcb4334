// What the viewer and the image page read: the image's preview tiles (made once, by a preview job
// or beside the first segmentation), the segmentation's page, and an image's predictions, each
// only for the organization that owns them.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { writePreviewArchive } from "../../schema/preview-tiles.ts";
import { encodeRoiArtifact } from "../../common/roi-artifact/writer.ts";
import { call, createOrg, json, pngBytes, RUNNER_TOKEN, type TestOrg, uploadImage } from "./helpers.ts";
import { dashboardCall, signIn } from "./dashboard-helpers.ts";
import type { Roi } from "../../schema/roi.ts";
import { encodeToBytes } from "./exports/helpers/artifact-store.ts";
import { inRasterOrder, roisFromShapes, syntheticShapes } from "../fixtures/rois-from-runs.ts";
import { parseCsv } from "./exports/helpers/csv-parse.ts";

/** A runner's tile archive for an 8 × 6 image: one full-resolution tile. */
const TILE = pngBytes(8, 6);
const ARCHIVE = writePreviewArchive({ width: 8, height: 6, tile: 512, levels: [{ factor: 1, width: 8, height: 6, columns: 1, rows: 1 }] }, [[TILE]]);
const put = (url: string, body: Uint8Array) => call(url, { method: "PUT", body, headers: { "Content-Length": String(body.length) } });

async function artifact(): Promise<Uint8Array> {
  const square = {
    index: 0,
    polygon: new Int32Array([1, 1, 1, 4, 4, 4, 4, 1]),
    area_px: 9,
    perimeter_px: 12,
    centroid_x: 2.5,
    centroid_y: 2.5,
    bbox_x: 1,
    bbox_y: 1,
    bbox_w: 3,
    bbox_h: 3,
  };
  const chunks: Uint8Array[] = [];
  for await (const chunk of encodeRoiArtifact({ imageWidth: 8, imageHeight: 6, confluency: 9 / 48, modelName: "cpsam", modelVersion: "1" }, [square]))
    chunks.push(chunk);
  const bytes = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) bytes.set(c, (at += c.length) - c.length);
  return bytes;
}

interface LeasedForTest {
  job_id: string;
  kind: string;
  lease_token: string;
  model?: unknown;
  image: { id: string; url: string };
  output: { artifact_url?: string; preview_url?: string };
}

async function lease(jobId: string): Promise<LeasedForTest> {
  for (;;) {
    const job = await json<LeasedForTest>(await call("/internal/jobs/lease", { key: RUNNER_TOKEN, json: { runner_id: "viewer-test", wait_seconds: 5 } }));
    if (job.job_id === jobId) return job;
  }
}

interface Segmented {
  imageId: string;
  segmentationId: string;
  previewAsked: boolean;
}

/** Segments an image the way a runner does (the prediction with `params`), storing `rois` as its artifact and the preview when `withPreview` and asked. */
async function segmentWith(
  org: TestOrg,
  rois: Uint8Array,
  result: { roi_count: number; width: number; height: number },
  withPreview = false,
  imageId?: string,
  params: Record<string, unknown> = {},
): Promise<Segmented> {
  const image = imageId ?? (await uploadImage(org)).id;
  const { prediction_id } = await json<{ prediction_id: string }>(
    await call("/predict", { key: org.key, json: { image_id: image, model_id: "cpsam", params } }),
  );
  const job = await lease(prediction_id);
  await put(job.output.artifact_url!, rois);
  if (withPreview && job.output.preview_url) await put(job.output.preview_url, ARCHIVE);
  await call(`/internal/jobs/${job.job_id}/complete`, {
    key: RUNNER_TOKEN,
    json: { lease_token: job.lease_token, result: { confluency: 9 / 48, ...result } },
  });
  const done = await json<{ segmentation_id: string }>(await call(`/predict/${prediction_id}`, { key: org.key }));
  return { imageId: image, segmentationId: done.segmentation_id, previewAsked: job.output.preview_url !== undefined };
}

/** Segments the 8 x 6 test image into one square. */
async function segment(org: TestOrg, withPreview: boolean, imageId?: string, roiCount = 1): Promise<Segmented> {
  return segmentWith(org, await artifact(), { roi_count: roiCount, width: 8, height: 6 }, withPreview, imageId);
}

describe("the image's preview", () => {
  it("is made beside the image's first segmentation and served a tile at a time; later predictions are not asked again", async () => {
    const org = await createOrg();
    const { imageId, previewAsked } = await segment(org, true);
    expect(previewAsked).toBe(true);
    const session = await signIn(org);
    const state = await json<{ status: string; index: unknown }>(await dashboardCall(session, `/api/images/${imageId}/preview`));
    expect(state).toEqual({
      status: "ready",
      index: { width: 8, height: 6, tile: 512, levels: [{ factor: 1, width: 8, height: 6, columns: 1, rows: 1, tiles: [[0, TILE.length]] }] },
    });
    const tile = await dashboardCall(session, `/api/images/${imageId}/preview/0/0/0`);
    expect(tile.status).toBe(200);
    expect(tile.headers.get("Content-Type")).toBe("image/png");
    expect(new Uint8Array(await tile.arrayBuffer())).toEqual(TILE);
    const outside = await dashboardCall(session, `/api/images/${imageId}/preview/0/1/0`);
    expect(outside.status).toBe(404);
    expect(await json(outside)).toEqual({ detail: `Image ${imageId} has no preview tile 0/1/0` });
    expect((await segment(org, true, imageId)).previewAsked).toBe(false);
  });

  it("is made at upload time by a preview job, once, which counts as no analysis and is no client's job", async () => {
    const org = await createOrg();
    const image = await uploadImage(org);
    const session = await signIn(org);
    expect(await json(await dashboardCall(session, `/api/images/${image.id}/preview`))).toEqual({ status: "none" });
    const asked = await dashboardCall(session, `/api/images/${image.id}/preview`, { method: "POST" });
    expect(asked.status).toBe(202);
    const queued = await json<{ status: string; job_id: string }>(asked);
    expect(queued).toEqual({ status: "SUBMITTED", job_id: expect.any(String), reason: null });
    expect(await json(await dashboardCall(session, `/api/images/${image.id}/preview`, { method: "POST" }))).toEqual(queued);

    const job = await lease(queued.job_id);
    expect(job.kind).toBe("preview");
    expect(job.model).toBeUndefined();
    expect(job.image.id).toBe(image.id);
    expect((await call(job.image.url)).status).toBe(200);
    expect((await put(job.output.preview_url!, ARCHIVE)).status).toBe(200);
    const done = await call(`/internal/jobs/${job.job_id}/complete`, {
      key: RUNNER_TOKEN,
      json: { lease_token: job.lease_token, result: { preview_bytes: ARCHIVE.length, levels: 1 } },
    });
    expect(done.status).toBe(200);

    expect(await json(await dashboardCall(session, `/api/images/${image.id}/preview`))).toMatchObject({ status: "ready" });
    expect((await dashboardCall(session, `/api/images/${image.id}/preview`, { method: "POST" })).status).toBe(200);
    expect(await json(await call(`/job/${job.job_id}`, { key: org.key }))).toEqual({ detail: `Job with id ${job.job_id} not found` });
    expect(await json(await dashboardCall(session, "/api/usage"))).toMatchObject({ analyses_this_month: { used: 0 } });
  });

  it("tells what the image is, and the image page then offers the public model recommended for it", async () => {
    const org = await createOrg();
    const image = await uploadImage(org);
    const session = await signIn(org);
    const offered = async () => {
      const page = await (await dashboardCall(session, `/images/${image.id}`)).text();
      return /<option value="([^"]+)" selected=""/.exec(page)?.[1] ?? null;
    };
    expect(await offered()).toBeNull();
    const queued = await json<{ job_id: string }>(await dashboardCall(session, `/api/images/${image.id}/preview`, { method: "POST" }));
    const job = await lease(queued.job_id);
    await put(job.output.preview_url!, ARCHIVE);
    const modality = { modality: "histology", source: "detected", reason: "stained: colour and brightness correlate at -0.90" };
    const done = await call(`/internal/jobs/${job.job_id}/complete`, {
      key: RUNNER_TOKEN,
      json: { lease_token: job.lease_token, result: { preview_bytes: ARCHIVE.length, levels: 1, modality } },
    });
    expect(done.status).toBe(200);
    expect(await offered()).toBe("cpsam-histology");
    expect(await (await dashboardCall(session, `/images/${image.id}`)).text()).toContain("(recommended for histology)");
  });

  it("is made for at most two images of an organization at a time: a third waits its turn (429), others' are not held up", async () => {
    const org = await createOrg();
    const session = await signIn(org);
    const [first, second, third] = [await uploadImage(org, "a.png"), await uploadImage(org, "b.png"), await uploadImage(org, "c.png")];
    const ask = (id: string, as = session) => dashboardCall(as, `/api/images/${id}/preview`, { method: "POST" });
    const queued = await json<{ job_id: string }>(await ask(first.id));
    expect((await ask(second.id)).status).toBe(202);
    const refused = await ask(third.id);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("Retry-After")).toBe("5");
    expect(await json(refused)).toEqual({ detail: "This organization already has 2 previews being made, the most at once; ask again when one is done" });
    expect(await json(await dashboardCall(session, `/api/images/${third.id}/preview`))).toEqual({ status: "none" });

    const other = await createOrg();
    expect((await ask((await uploadImage(other)).id, await signIn(other))).status).toBe(202);

    const job = await lease(queued.job_id);
    await put(job.output.preview_url!, ARCHIVE);
    await call(`/internal/jobs/${job.job_id}/complete`, {
      key: RUNNER_TOKEN,
      json: { lease_token: job.lease_token, result: { preview_bytes: ARCHIVE.length, levels: 1 } },
    });
    expect((await ask(third.id)).status).toBe(202);
  });

  it("a preview job whose completion comes without the archive is refused; a failed one is not asked again", async () => {
    const org = await createOrg();
    const image = await uploadImage(org);
    const session = await signIn(org);
    const { job_id } = await json<{ job_id: string }>(await dashboardCall(session, `/api/images/${image.id}/preview`, { method: "POST" }));
    const job = await lease(job_id);
    const early = await call(`/internal/jobs/${job_id}/complete`, {
      key: RUNNER_TOKEN,
      json: { lease_token: job.lease_token, result: { preview_bytes: 10, levels: 1 } },
    });
    expect(early.status).toBe(400);
    expect(await json(early)).toEqual({ detail: "The preview was not uploaded (expected at the job's signed output URL)" });
    await call(`/internal/jobs/${job_id}/fail`, {
      key: RUNNER_TOKEN,
      json: { lease_token: job.lease_token, reason: "image could not be decoded", fault: "input" },
    });
    const again = await json(await dashboardCall(session, `/api/images/${image.id}/preview`, { method: "POST" }));
    expect(again).toEqual({ status: "FAILED", job_id, reason: "image could not be decoded" });
  });

  it("goes with its image, and another organization's is answered like a missing one", async () => {
    const org = await createOrg();
    const { imageId } = await segment(org, true);
    const stranger = await signIn(await createOrg());
    for (const path of [`/api/images/${imageId}/preview`, `/api/images/${imageId}/preview/0/0/0`]) {
      expect(await json(await dashboardCall(stranger, path))).toEqual({ detail: `Image with id ${imageId} not found` });
    }
    expect(await json(await dashboardCall(stranger, `/api/images/${imageId}/preview`, { method: "POST" }))).toEqual({
      detail: `Image with id ${imageId} not found`,
    });
    expect(await env.BUCKET.head(`orgs/${org.id}/images/${imageId}/preview.tiles`)).not.toBeNull();
    expect((await call(`/image/${imageId}`, { method: "DELETE", key: org.key })).status).toBe(204);
    expect(await env.BUCKET.head(`orgs/${org.id}/images/${imageId}/preview.tiles`)).toBeNull();
  });
});

describe("the viewer's data", () => {
  it("serves a segmentation's page with its cell count and the five downloads, and a preview stored the older way", async () => {
    const org = await createOrg();
    const { segmentationId } = await segment(org, true);
    const session = await signIn(org);
    const legacy = pngBytes(8, 6);
    await env.BUCKET.put(`orgs/${org.id}/segmentations/${segmentationId}/preview.png`, legacy);
    const png = await dashboardCall(session, `/api/segmentation/${segmentationId}/preview.png`);
    expect(png.status).toBe(200);
    expect(png.headers.get("Content-Type")).toBe("image/png");
    expect(new Uint8Array(await png.arrayBuffer())).toEqual(legacy);
    const page = await (await dashboardCall(session, `/segmentations/${segmentationId}`)).text();
    expect(page).toMatch(/<span id="cell-count">1<\/span> cells/);
    for (const format of ["measurements.csv", "rois.geojson", "rois.zip", "masks.png", "masks.tif"]) {
      expect(page).toContain(`href="/dashboard/api/export/${segmentationId}/${format}"`);
    }
    const geojson = await json<{ features: unknown[] }>(await dashboardCall(session, `/api/export/${segmentationId}/rois.geojson`));
    expect(geojson.features).toHaveLength(1);
  });

  it("offers masks.tif and no masks.png above 65,535 cells", async () => {
    const org = await createOrg();
    const { segmentationId } = await segment(org, false, undefined, 70_000);
    const page = await (await dashboardCall(await signIn(org), `/segmentations/${segmentationId}`)).text();
    expect(page).toMatch(/<span id="cell-count">70,000<\/span> cells/);
    expect(page).toContain(`href="/dashboard/api/export/${segmentationId}/masks.tif"`);
    expect(page).not.toContain(`/${segmentationId}/masks.png"`);
  });

  it("says plainly when a segmentation has no preview of the older kind", async () => {
    const org = await createOrg();
    const { segmentationId } = await segment(org, false);
    const response = await dashboardCall(await signIn(org), `/api/segmentation/${segmentationId}/preview.png`);
    expect(response.status).toBe(404);
    expect(await json(response)).toEqual({
      detail: `Segmentation ${segmentationId} has no preview (segmented before previews existed); run the prediction again`,
    });
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
      env.DB.prepare(
        "INSERT INTO models (id, org_id, name, version, base_model_id, r2_prefix, training, created_at) VALUES (?1, ?2, ?3, '1', 'cpsam', ?4, ?5, ?6)",
      )
        .bind(
          id,
          orgId,
          name,
          `models/${id}/1/`,
          JSON.stringify({ steps: 150, image_ids: ["a", "b"], validation: { ap50_before: 0.7, ap50_after: 0.8125 } }),
          Date.now(),
        )
        .run();
    await insert(crypto.randomUUID(), org.id, "my-nuclei");
    await insert(crypto.randomUUID(), other.id, "their-nuclei");
    const page = await (await dashboardCall(await signIn(org), "/models")).text();
    expect(page).toContain("my-nuclei");
    expect(page).toContain("AP@0.5 0.813 (base 0.700) · 150 steps · 2 images");
    expect(page).toContain("cpsam");
    expect(page).not.toContain("their-nuclei");
  });

  it("starts a training from selected images through the session, CSRF-protected, and lists it with its progress", async () => {
    const org = await createOrg();
    const { imageId } = await segment(org, false);
    const bare = await uploadImage(org, "unsegmented.png");
    const session = await signIn(org);
    const before = await (await dashboardCall(session, "/models")).text();
    // A predicted segmentation teaches nothing new: such an image is offered, marked, and not selected to start with.
    expect(before).toMatch(new RegExp(`<input type="checkbox" name="image_id" value="${imageId}" aria-label="[^"]+" data-source="model"/>`));
    expect(before).not.toContain(`value="${bare.id}"`); // nothing to learn from
    expect(before).toContain('<span class="badge">predicted only</span> 1 cells');
    expect(before).toContain('id="training-warning"');
    expect(before).toContain("No trainings yet.");

    const body = { model_id: "cpsam", image_ids: [imageId], steps: 3, name: "from-the-dashboard" };
    const forged = await dashboardCall(session, "/api/job/training", { json: body, headers: { "X-CSRF-Token": "" } });
    expect(forged.status).toBe(403);
    const submitted = await dashboardCall(session, "/api/job/training", { json: body });
    expect(submitted.status).toBe(202);
    const { job_id } = await json<{ job_id: string }>(submitted);
    expect(await json(await dashboardCall(session, `/api/job/${job_id}`))).toMatchObject({
      kind: "training",
      status: "SUBMITTED",
      image_ids: [imageId],
      stage: "queued",
    });

    const after = await (await dashboardCall(session, "/models")).text();
    expect(after).toMatch(new RegExp(`<tr data-job-id="${job_id}" data-status="SUBMITTED">.*?<td>1</td>.*?queued`, "s"));
    const stranger = await (await dashboardCall(await signIn(await createOrg()), "/models")).text();
    expect(stranger).not.toContain(job_id);
    expect(stranger).not.toContain(imageId);
  });
});

describe("the viewer's outlines, a tile at a time", () => {
  interface Feature {
    properties: { roi_index: number; bbox_x: number; bbox_y: number };
    geometry: { coordinates: number[][][] };
  }
  const features = async (response: Response) => (await json<{ features: Feature[] }>(response)).features;
  const wide = roisFromShapes(inRasterOrder(syntheticShapes(150, 100, 20, 5)));
  const wideArtifact = () => encodeToBytes({ imageWidth: 3000, imageHeight: 2000, confluency: 0.3, modelName: "cpsam", modelVersion: "1" }, wide);

  it("cuts the image into 1024-px tiles, each holding the cells whose bounding box starts in it, exactly as rois.geojson with every column has them", async () => {
    const org = await createOrg();
    const { segmentationId } = await segmentWith(org, await wideArtifact(), { roi_count: wide.length, width: 3000, height: 2000 });
    const session = await signIn(org);
    const grid = await dashboardCall(session, `/api/segmentation/${segmentationId}/outlines`);
    expect(await json(grid)).toEqual({
      tile: 1024,
      columns: 3,
      rows: 2,
      roi_count: wide.length,
      max_extent: Math.max(...wide.map((r) => Math.max(r.bbox_w, r.bbox_h))),
    });

    const tiled: Feature[] = [];
    for (let row = 0; row < 2; row++) {
      for (let column = 0; column < 3; column++) {
        const tile = await dashboardCall(session, `/api/segmentation/${segmentationId}/outlines/${column}/${row}`);
        expect(tile.headers.get("Content-Type")).toBe("application/geo+json");
        const cells = await features(tile);
        expect(cells.length).toBeGreaterThan(1000);
        for (const { properties: p } of cells) {
          expect([Math.floor(p.bbox_x / 1024), Math.floor(p.bbox_y / 1024)]).toEqual([column, row]);
        }
        tiled.push(...cells);
      }
    }
    // Every measurement column, for the viewer's cell panel.
    const whole = await features(await dashboardCall(session, `/api/export/${segmentationId}/rois.geojson?columns=all`));
    expect(Object.keys(whole[0]!.properties)).toContain("solidity");
    expect(tiled.sort((a, b) => a.properties.roi_index - b.properties.roi_index)).toEqual(whole);
    expect(whole.length).toBe(wide.length);
  }, 30_000);

  it("keeps the index beside the artifact, gone with the segmentation; tiles outside the image and other organizations' are 404", async () => {
    const org = await createOrg();
    const { segmentationId } = await segmentWith(org, await wideArtifact(), { roi_count: wide.length, width: 3000, height: 2000 });
    const session = await signIn(org);
    expect((await dashboardCall(session, `/api/segmentation/${segmentationId}/outlines/1/1`)).status).toBe(200);
    const prefix = `orgs/${org.id}/segmentations/${segmentationId}/`;
    const bucket = (env as unknown as { BUCKET: R2Bucket }).BUCKET;
    expect((await bucket.list({ prefix })).objects.map((o) => o.key.slice(prefix.length)).sort()).toEqual(["rois.bin", "rois.index.json"]);

    const outside = await dashboardCall(session, `/api/segmentation/${segmentationId}/outlines/3/0`);
    expect(outside.status).toBe(404);
    expect(await json(outside)).toEqual({ detail: `Segmentation ${segmentationId} has no outline tile 3/0: it has 3 x 2 of 1024 px` });
    const stranger = await signIn(await createOrg());
    expect((await dashboardCall(stranger, `/api/segmentation/${segmentationId}/outlines`)).status).toBe(404);
    expect((await dashboardCall(stranger, `/api/segmentation/${segmentationId}/outlines/0/0`)).status).toBe(404);

    expect((await call(`/segmentation/${segmentationId}`, { key: org.key, method: "DELETE" })).status).toBe(204);
    expect((await bucket.list({ prefix })).objects).toEqual([]);
  });

  it("refuses, before reading, a tile whose cells would cost more than 8 MiB of stored outlines", async () => {
    // Four combs across a 600,000-px-wide image: 1.2 million vertices each, all starting in tile 0/0.
    const width = 600_000;
    const comb = (index: number): Roi => {
      const top = index * 3;
      const polygon = new Int32Array(2 * (2 + 2 * width));
      let at = 0;
      const vertex = (x: number, y: number) => {
        polygon[at++] = x;
        polygon[at++] = y;
      };
      vertex(0, top + 2);
      vertex(0, top);
      for (let x = 1; x < width; x += 2) {
        vertex(x, top);
        vertex(x, top + 1);
        vertex(x + 1, top + 1);
        vertex(x + 1, top);
      }
      polygon[at - 1] = top + 2; // the last tooth's top is the outline's far corner
      return {
        index,
        polygon: polygon.subarray(0, at),
        area_px: (3 * width) / 2,
        perimeter_px: 3 * width,
        centroid_x: width / 2,
        centroid_y: top + 1,
        bbox_x: 0,
        bbox_y: top,
        bbox_w: width,
        bbox_h: 2,
      };
    };
    const combs = [0, 1, 2, 3].map(comb);
    const bytes = await encodeToBytes({ imageWidth: width, imageHeight: 12, confluency: 0.5, modelName: "cpsam", modelVersion: "1" }, combs);
    expect(bytes.length).toBeGreaterThan(8 * 1024 * 1024);
    const org = await createOrg();
    const { segmentationId } = await segmentWith(org, bytes, { roi_count: 4, width, height: 12 });
    const session = await signIn(org);
    const refused = await dashboardCall(session, `/api/segmentation/${segmentationId}/outlines/0/0`);
    expect(refused.status).toBe(422);
    expect((await json<{ detail: string }>(refused)).detail).toMatch(
      /^Outline tile 0\/0 would read \d+ bytes of stored ROIs, more than the 8388608 a tile may; download rois\.geojson or masks\.tif instead$/,
    );
    expect(await features(await dashboardCall(session, `/api/segmentation/${segmentationId}/outlines/1/0`))).toEqual([]);
  });
});

describe("the plots' values: one or two numeric columns for every cell", () => {
  // 96 blobs of random sizes on a 240 x 160 image, 12 x 8 tiles of 20 px.
  const blobs = roisFromShapes(inRasterOrder(syntheticShapes(12, 8, 20, 11)));
  const blobArtifact = () => encodeToBytes({ imageWidth: 240, imageHeight: 160, confluency: 0.3, modelName: "cpsam", modelVersion: "1" }, blobs);
  const segmentBlobs = async (org: TestOrg, params: Record<string, unknown> = {}) =>
    (await segmentWith(org, await blobArtifact(), { roi_count: blobs.length, width: 240, height: 160 }, false, undefined, params)).segmentationId;

  /** The answer's Float64 values, one row per cell (its columns in the order asked). */
  async function valueRows(response: Response, columns: number): Promise<number[][]> {
    expect(response.status).toBe(200);
    expect(response.headers.get("Content-Type")).toBe("application/octet-stream");
    const bytes = new DataView(await response.arrayBuffer());
    const rows: number[][] = [];
    for (let at = 0; at < bytes.byteLength; at += 8 * columns) {
      rows.push(Array.from({ length: columns }, (_, c) => bytes.getFloat64(at + 8 * c, true)));
    }
    return rows;
  }

  /** measurements.csv's fields of `columns` as numbers, an empty field as NaN. */
  async function csvRows(session: Awaited<ReturnType<typeof signIn>>, id: string, columns: string[]): Promise<number[][]> {
    const query = columns.map((c) => `columns=${c}`).join("&");
    const [header, ...rows] = parseCsv(await (await dashboardCall(session, `/api/export/${id}/measurements.csv?${query}`)).text());
    expect(header).toEqual(columns);
    return rows.map((row) => row.map((field) => (field === "" ? Number.NaN : Number(field))));
  }

  it("offers the numeric columns that differ from cell to cell, with the cell count and the most cells an answer carries", async () => {
    const org = await createOrg();
    const id = await segmentBlobs(org);
    const offered = await json<{ cell_count: number; max_cells: number; columns: { name: string; group: string; description: string }[] }>(
      await dashboardCall(await signIn(org), `/api/segmentation/${id}/columns`),
    );
    expect(offered.cell_count).toBe(96);
    expect(offered.max_cells).toBe(200_000);
    const names = offered.columns.map((c) => c.name);
    expect(names).toEqual(expect.arrayContaining(["area_px", "perimeter_px", "circularity", "solidity", "feret_max_px", "area_um2"]));
    // Text, and numbers that are the segmentation's rather than the cell's, make no plot.
    for (const name of ["image_name", "roi_id", "confluency", "image_width", "pixel_size_x_um"]) expect(names).not.toContain(name);
    expect(offered.columns.find((c) => c.name === "circularity")).toEqual({ name: "circularity", group: "shape", description: expect.stringContaining("4π") });
  });

  it("answers one column, or two cell by cell, as Float64 values equal to measurements.csv's", async () => {
    const org = await createOrg();
    const id = await segmentBlobs(org, { pixel_size_um: 0.5 });
    const session = await signIn(org);
    const one = await dashboardCall(session, `/api/segmentation/${id}/values?x=area_px`);
    expect(one.headers.get("X-Cell-Count")).toBe("96");
    expect(one.headers.get("X-Cells-Returned")).toBe("96");
    expect(one.headers.get("X-Columns")).toBe("area_px");
    expect(await valueRows(one, 1)).toEqual(await csvRows(session, id, ["area_px"]));

    const two = await dashboardCall(session, `/api/segmentation/${id}/values?x=area_um2&y=circularity`);
    expect(two.headers.get("X-Columns")).toBe("area_um2,circularity");
    const rows = await valueRows(two, 2);
    expect(rows).toEqual(await csvRows(session, id, ["area_um2", "circularity"]));
    expect(rows).toHaveLength(96);
    expect(new Set(rows.map(([area]) => area)).size).toBeGreaterThan(20); // blobs of many sizes, not one repeated
  });

  it("streams many chunks of stored ROIs in blocks of values: 15,000 cells, every one in order", async () => {
    const many = roisFromShapes(inRasterOrder(syntheticShapes(150, 100, 20, 5)));
    const bytes = await encodeToBytes({ imageWidth: 3000, imageHeight: 2000, confluency: 0.3, modelName: "cpsam", modelVersion: "1" }, many);
    const org = await createOrg();
    const { segmentationId: id } = await segmentWith(org, bytes, { roi_count: many.length, width: 3000, height: 2000 });
    const session = await signIn(org);
    const rows = await valueRows(await dashboardCall(session, `/api/segmentation/${id}/values?x=perimeter_px&y=solidity`), 2);
    expect(rows).toHaveLength(15_000);
    expect(rows).toEqual(await csvRows(session, id, ["perimeter_px", "solidity"]));
  }, 30_000);

  it("gives NaN where the CSV's field is empty: the µm columns of a segmentation without a pixel size", async () => {
    const org = await createOrg();
    const id = await segmentBlobs(org);
    const session = await signIn(org);
    const rows = await valueRows(await dashboardCall(session, `/api/segmentation/${id}/values?x=area_um2&y=area_px`), 2);
    expect(rows).toEqual(await csvRows(session, id, ["area_um2", "area_px"]));
    expect(rows.every(([um2, px]) => Number.isNaN(um2) && px! > 0)).toBe(true);
  });

  it("above max_cells answers an even, repeatable sample, cell floor(j · cells / max_cells), and says how many cells there are", async () => {
    const org = await createOrg();
    const id = await segmentBlobs(org);
    const session = await signIn(org);
    const sample = () => dashboardCall(session, `/api/segmentation/${id}/values?x=roi_index&y=area_px&max_cells=10`);
    const first = await sample();
    expect(first.headers.get("X-Cell-Count")).toBe("96");
    expect(first.headers.get("X-Cells-Returned")).toBe("10");
    const rows = await valueRows(first, 2);
    const indices = Array.from({ length: 10 }, (_, j) => Math.floor((j * 96) / 10));
    expect(rows.map(([roiIndex]) => roiIndex)).toEqual(indices.map((i) => i + 1));
    expect(rows.map(([, area]) => area)).toEqual(indices.map((i) => blobs[i]!.area_px));
    expect(await valueRows(await sample(), 2)).toEqual(rows);
    // 200,000 is the most: a larger max_cells is refused, not obeyed.
    expect((await dashboardCall(session, `/api/segmentation/${id}/values?x=area_px&max_cells=200001`)).status).toBe(422);
  });

  it("refuses a column that is unknown or not numeric with a 400 naming the numeric ones; another organization's segmentation is 404", async () => {
    const org = await createOrg();
    const id = await segmentBlobs(org);
    const session = await signIn(org);
    const offered = await json<{ columns: { name: string }[] }>(await dashboardCall(session, `/api/segmentation/${id}/columns`));
    for (const column of ["volume", "image_name"]) {
      const refused = await dashboardCall(session, `/api/segmentation/${id}/values?x=area_px&y=${column}`);
      expect(refused.status).toBe(400);
      expect(await json(refused)).toEqual({
        detail: `Not a numeric column of segmentation ${id}: ${column}; its numeric columns are ${offered.columns.map((c) => c.name).join(", ")}`,
      });
    }
    expect((await dashboardCall(session, `/api/segmentation/${id}/values`)).status).toBe(422); // x is needed

    const stranger = await signIn(await createOrg());
    for (const path of [`/api/segmentation/${id}/columns`, `/api/segmentation/${id}/values?x=area_px`]) {
      const response = await dashboardCall(stranger, path);
      expect(response.status).toBe(404);
      expect(await json(response)).toEqual({ detail: `Segmentation with id ${id} not found` });
    }
  });
});
