// The export routes end to end: a runner posts a real ROI artifact, the user downloads it.
import { describe, expect, it } from "vitest";
import { decodeImage } from "../../common/decode/index.ts";
import { encodeRoiArtifact } from "../../common/roi-artifact/writer.ts";
import type { Roi } from "../../schema/roi.ts";
import { call, createOrg, json, RUNNER_TOKEN, type TestOrg, uploadImage } from "./helpers.ts";
import { formatMeasurement } from "../../schema/measurements.ts";

/** A number as the exports write it (rounded by formatMeasurement), parsed back. */
const exported = (value: number) => Number(formatMeasurement(value));

/** A w x h rectangle at (x, y), as the engine would describe it. */
function rectangle(index: number, x: number, y: number, w: number, h: number): Roi {
  return {
    index,
    polygon: new Int32Array([x, y, x, y + h, x + w, y + h, x + w, y]),
    area_px: w * h,
    perimeter_px: 2 * (w + h),
    centroid_x: x + w / 2,
    centroid_y: y + h / 2,
    bbox_x: x,
    bbox_y: y,
    bbox_w: w,
    bbox_h: h,
  };
}

const TWO_CELLS = { width: 8, height: 6, rois: [rectangle(0, 1, 1, 2, 2), rectangle(1, 4, 2, 3, 3)] };

async function segmented(org: TestOrg, artifact = TWO_CELLS): Promise<string> {
  const image = await uploadImage(org, "well A1, ü.png");
  const { prediction_id } = await json(await call("/predict", { key: org.key, json: { image_id: image.id, model_id: "cpsam" } }));
  for (;;) {
    const job = await json<{ job_id: string; lease_token: string; output: { artifact_url: string } }>(
      await call("/internal/jobs/lease", { key: RUNNER_TOKEN, json: { runner_id: "exporter", wait_seconds: 5 } }),
    );
    const { width, height, rois } = artifact;
    const confluency = rois.reduce((n, r) => n + r.area_px, 0) / (width * height);
    const chunks: Uint8Array[] = [];
    for await (const chunk of encodeRoiArtifact({ imageWidth: width, imageHeight: height, confluency, modelName: "cpsam", modelVersion: "1" }, rois))
      chunks.push(chunk);
    const bytes = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
    let at = 0;
    for (const c of chunks) bytes.set(c, (at += c.length) - c.length);
    await call(job.output.artifact_url, { method: "PUT", body: bytes, headers: { "Content-Length": String(bytes.length) } });
    await call(`/internal/jobs/${job.job_id}/complete`, {
      key: RUNNER_TOKEN,
      json: { lease_token: job.lease_token, result: { roi_count: rois.length, confluency, width, height } },
    });
    if (job.job_id === prediction_id) break;
  }
  return (await json(await call(`/predict/${prediction_id}`, { key: org.key }))).segmentation_id as string;
}

describe("GET /export/{segmentation_id}/{format}", () => {
  it("streams every format with its media type and an attachment name", async () => {
    const org = await createOrg();
    const id = await segmented(org);
    const expected: Record<string, [RegExp, string]> = {
      "measurements.csv": [/^text\/csv/, "measurements.csv"],
      "rois.geojson": [/^application\/geo\+json/, "rois.geojson"],
      "rois.zip": [/^application\/zip/, "rois.zip"],
      "masks.png": [/^image\/png/, "masks.png"],
      "masks.tif": [/^image\/tiff$/, "masks.tif"],
    };
    for (const [format, [type, suffix]] of Object.entries(expected)) {
      const response = await call(`/export/${id}/${format}`, { key: org.key });
      expect(response.status, format).toBe(200);
      expect(response.headers.get("Content-Type")).toMatch(type);
      expect(response.headers.get("Content-Disposition")).toBe(`attachment; filename="well A1, _-${suffix}"; filename*=UTF-8''well%20A1%2C%20%C3%BC-${suffix}`);
      expect((await response.arrayBuffer()).byteLength).toBeGreaterThan(0);
    }
    const csv = await (await call(`/export/${id}/measurements.csv?columns=roi_index&columns=area_px`, { key: org.key })).text();
    expect(csv.trim().split(/\r?\n/)).toEqual(["roi_index,area_px", "1,4", "2,9"]);
  });

  it("refuses masks.png above 65,535 cells with 422 naming the count and masks.tif, which serves them", async () => {
    const org = await createOrg();
    const [width, height] = [300, 240];
    const rois = Array.from({ length: 70_000 }, (_, i) => rectangle(i, i % width, Math.floor(i / width), 1, 1));
    const id = await segmented(org, { width, height, rois });
    const png = await call(`/export/${id}/masks.png`, { key: org.key });
    expect(png.status).toBe(422);
    expect(await json(png)).toEqual({
      detail:
        "This segmentation has 70000 cells; masks.png holds at most 65535 (16-bit labels). Download masks.tif instead: the same label image with 32-bit labels",
    });
    const tif = await call(`/export/${id}/masks.tif`, { key: org.key });
    expect(tif.status).toBe(200);
    expect(tif.headers.get("Content-Type")).toBe("image/tiff");
    const labels = decodeImage(new Uint8Array(await tif.arrayBuffer()));
    expect([labels.width, labels.height, labels.bitDepth]).toEqual([width, height, 32]);
    expect([labels.data[0], labels.data[69_999], labels.data[70_000]]).toEqual([1, 70_000, 0]);
  }, 60_000);

  it("answers 400 naming unknown columns and listing the valid ones", async () => {
    const org = await createOrg();
    const id = await segmented(org);
    const response = await call(`/export/${id}/measurements.csv?columns=area_px&columns=volume`, { key: org.key });
    expect(response.status).toBe(400);
    const { detail } = await json(response);
    expect(detail).toMatch(/volume/);
    expect(detail).toMatch(/centroid_x/);
  });

  it("adds the shape columns by group to the CSV and the GeoJSON, and refuses an unknown one on either with 400", async () => {
    const org = await createOrg();
    const id = await segmented(org);
    const csv = await (await call(`/export/${id}/measurements.csv?columns=roi_index&columns=shape`, { key: org.key })).text();
    const [header, first] = csv.trim().split(/\r?\n/);
    expect(header).toBe("roi_index,circularity,solidity,eccentricity,major_axis_px,minor_axis_px,orientation_deg,feret_max_px,equivalent_diameter_px");
    // The first cell is a 2 x 2 square stated with perimeter 8: circularity π/4, solidity 1, a
    // disc's ellipse (axes 4·√0.25, no eccentricity, angle 0), Feret its diagonal.
    expect(first?.split(",").map(Number)).toEqual([1, (4 * Math.PI * 4) / 64, 1, 0, 2, 2, 0, Math.sqrt(8), Math.sqrt(16 / Math.PI)].map(exported));
    const geojson = await json<{ features: { properties: Record<string, unknown> }[] }>(
      await call(`/export/${id}/rois.geojson?columns=roi_index&columns=feret_max_px`, { key: org.key }),
    );
    expect(geojson.features.map((f) => f.properties)).toEqual([
      { roi_index: 1, feret_max_px: exported(Math.sqrt(8)), objectType: "detection" },
      { roi_index: 2, feret_max_px: exported(Math.sqrt(18)), objectType: "detection" },
    ]);
    const refused = await call(`/export/${id}/rois.geojson?columns=volume`, { key: org.key });
    expect(refused.status).toBe(400);
    expect((await json(refused)).detail).toMatch(
      /unknown column\(s\): volume; valid columns: .*feret_max_px.*; or a group of them: default, shape, calibrated, all/,
    );
  });

  it("answers 404 for another organization's segmentation exactly as for a missing one, and 401 without a key", async () => {
    const owner = await createOrg();
    const stranger = await createOrg();
    const id = await segmented(owner);
    for (const format of ["rois.geojson", "masks.tif"]) {
      const foreign = await call(`/export/${id}/${format}`, { key: stranger.key });
      expect(foreign.status).toBe(404);
      expect(await json(foreign)).toEqual({ detail: `Segmentation with id ${id} not found` });
      expect((await call(`/export/${id}/${format}`)).status).toBe(401);
    }
  });

  it("answers 422 for malformed parameters", async () => {
    const org = await createOrg();
    const id = await segmented(org);
    const response = await call(`/export/${id}/measurements.csv?columns=`, { key: org.key });
    expect(response.status).toBe(422);
    expect((await json<{ detail: { loc: unknown[] }[] }>(response)).detail[0]?.loc).toEqual(["query", "columns", 0]);
  });
});
