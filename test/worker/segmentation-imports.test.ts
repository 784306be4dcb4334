// POST /segmentation and DELETE /segmentation/{id}: corrected annotations come in as segmentations
// of source "import", stored like a model's, and leave nothing behind when refused or deleted.
import { env } from "cloudflare:workers";
import { decode as decodePng, encode as encodePng } from "fast-png";
import { describe, expect, it } from "vitest";
import { call, createOrg, json, type TestOrg, uploadImage } from "./helpers.ts";

const square = (x: number, y: number, s: number) => [
  [x, y],
  [x + s, y],
  [x + s, y + s],
  [x, y + s],
  [x, y],
];
const cellsGeoJson = JSON.stringify({
  type: "FeatureCollection",
  features: [square(1, 1, 2), square(4, 2, 3)].map((ring) => ({
    type: "Feature",
    geometry: { type: "Polygon", coordinates: [ring] },
    properties: { objectType: "detection" },
  })),
});

function importForm(imageId: string | null, file: string | Uint8Array | null, name = "cells.geojson"): FormData {
  const form = new FormData();
  if (imageId !== null) form.append("image_id", imageId);
  if (file !== null) form.append("file", new File([file], name));
  return form;
}

async function importInto(org: TestOrg, imageId: string, file: string | Uint8Array = cellsGeoJson): Promise<Response> {
  return call("/segmentation", { key: org.key, body: importForm(imageId, file) });
}

async function stored(org: TestOrg): Promise<{ rows: number; objects: number }> {
  const rows = await env.DB.prepare("SELECT count(*) AS n FROM segmentations WHERE org_id = ?").bind(org.id).first<{ n: number }>();
  const listing = await env.BUCKET.list({ prefix: `orgs/${org.id}/segmentations/` });
  return { rows: rows!.n, objects: listing.objects.length };
}

describe("POST /segmentation", () => {
  it("imports an annotation for an image: 201 with the segmentation, source import and cell count", async () => {
    const org = await createOrg();
    const image = await uploadImage(org); // 8 x 6
    const response = await importInto(org, image.id);
    expect(response.status).toBe(201);
    const body = await json(response);
    expect(body).toEqual({
      segmentation_id: expect.any(String),
      image_id: image.id,
      source: "import",
      cell_count: 2,
      measurements: { status: "measuring", detail: null },
    });
    const summary = await json(await call(`/segmentation/${body.segmentation_id}`, { key: org.key }));
    expect(summary).toMatchObject({ id: body.segmentation_id, image_id: image.id, source: "import", cell_count: 2, model_id: null, width: 8, height: 6 });
    expect(await stored(org)).toEqual({ rows: 1, objects: 1 });
  });

  it("exports of the imported segmentation give its objects back and say segmentation_source import", async () => {
    const org = await createOrg();
    const image = await uploadImage(org);
    const { segmentation_id } = await json(await importInto(org, image.id));
    const mask = decodePng(new Uint8Array(await (await call(`/export/${segmentation_id}/masks.png`, { key: org.key })).arrayBuffer()));
    const rows = Array.from({ length: 6 }, (_, y) => Array.from(mask.data.subarray(y * 8, y * 8 + 8), (k) => (k === 0 ? "." : String(k))).join(""));
    expect(rows).toEqual(["........", ".11.....", ".11.222.", "....222.", "....222.", "........"]);
    const csv = await (await call(`/export/${segmentation_id}/measurements.csv?columns=segmentation_source&columns=area_px`, { key: org.key })).text();
    expect(csv).toBe("segmentation_source,area_px\r\nimport,4\r\nimport,9\r\n");
  });

  it("does not count against the monthly analysis cap", async () => {
    const org = await createOrg({ analysisCap: 1 });
    const image = await uploadImage(org);
    // Two, more than the cap, and as many as may be measured at once (JOBS_IN_HAND_PER_ORG).
    for (let i = 0; i < 2; i++) expect((await importInto(org, image.id)).status).toBe(201);
    expect((await call("/predict", { key: org.key, json: { image_id: image.id, model_id: "cpsam" } })).status).toBe(202);
  });

  it.each([
    ["an unknown file type", 415, "just,some\ncsv,text\n", /^Annotation refused: not an annotation file/],
    ["an unreadable file", 415, '{"type": "FeatureCollection", "features": [', /^Annotation refused: GeoJSON unreadable/],
    [
      "a label image of another size",
      422,
      encodePng({ width: 4, height: 3, data: new Uint16Array(12).fill(1), depth: 16, channels: 1 }),
      /^Annotation refused: the label image is 4x3 but the image is 8x6$/,
    ],
    ["a file without objects", 422, '{"type":"FeatureCollection","features":[]}', /^Annotation refused: no object lies inside the 8x6 image$/],
  ])("refuses %s with %i and a detail, storing nothing", async (_, status, file, detail) => {
    const org = await createOrg();
    const image = await uploadImage(org);
    const response = await importInto(org, image.id, file);
    expect(response.status).toBe(status);
    expect((await json(response)).detail).toMatch(detail);
    expect(await stored(org)).toEqual({ rows: 0, objects: 0 });
  });

  it("refuses an image whose upload is not ready yet with 409", async () => {
    const org = await createOrg();
    const { image } = await json<{ image: { id: string } }>(await call("/upload", { key: org.key, json: { name: "big.tif", size: 1000 } }));
    const response = await importInto(org, image.id);
    expect(response.status).toBe(409);
    expect((await json(response)).detail).toBe(`Image ${image.id} is pending, not ready: wait for its upload to finish processing`);
    expect(await stored(org)).toEqual({ rows: 0, objects: 0 });
  });

  it("answers a missing field with the validation shape, and another organization's image like a missing one", async () => {
    const org = await createOrg();
    const response = await call("/segmentation", { key: org.key, body: importForm(null, null) });
    expect(response.status).toBe(422);
    expect((await json(response)).detail).toEqual([
      { loc: ["body", "image_id"], msg: "Field required", type: "missing" },
      { loc: ["body", "file"], msg: "Field required", type: "missing" },
    ]);
    const notMultipart = await call("/segmentation", { key: org.key, json: { image_id: "x" } });
    expect(notMultipart.status).toBe(415);
    expect((await json(notMultipart)).detail).toBe("Send multipart/form-data with a field 'image_id' and the annotation file in a part named 'file'");
    const other = await createOrg();
    const foreign = await uploadImage(other);
    const refused = await importInto(org, foreign.id);
    expect(refused.status).toBe(404);
    expect(await json(refused)).toEqual({ detail: `Image with id ${foreign.id} not found` });
    expect(await stored(other)).toEqual({ rows: 0, objects: 0 });
  });
});

describe("DELETE /segmentation/{id}", () => {
  it("removes the segmentation and its artifact; another organization gets 404 and changes nothing", async () => {
    const org = await createOrg();
    const image = await uploadImage(org);
    const { segmentation_id } = await json(await importInto(org, image.id));
    const other = await createOrg();
    const foreign = await call(`/segmentation/${segmentation_id}`, { key: other.key, method: "DELETE" });
    expect(foreign.status).toBe(404);
    expect(await json(foreign)).toEqual({ detail: `Segmentation with id ${segmentation_id} not found` });
    expect(await stored(org)).toEqual({ rows: 1, objects: 1 });

    expect((await call(`/segmentation/${segmentation_id}`, { key: org.key, method: "DELETE" })).status).toBe(204);
    expect((await call(`/segmentation/${segmentation_id}`, { key: org.key })).status).toBe(404);
    expect((await call(`/export/${segmentation_id}/rois.zip`, { key: org.key })).status).toBe(404);
    expect(await stored(org)).toEqual({ rows: 0, objects: 0 });
  });
});
