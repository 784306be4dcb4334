// Two segmentations of one image side by side (the dashboard's /images/{id}/compare): which model
// made each, its cells, its outlines drawn over the image, and where the image has an imported
// annotation, AP@0.5 and AP@0.75 against it, as training scores them.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { inRasterOrder, type RunShape, roisFromShapes } from "../fixtures/rois-from-runs.ts";
import { dashboardCall, signIn } from "./dashboard-helpers.ts";
import { encodeToBytes } from "./exports/helpers/artifact-store.ts";
import { call, createOrg, json, pngBytes, type TestOrg, uploadImage } from "./helpers.ts";
import { leaseJob, runner } from "./runner-helpers.ts";

const WIDTH = 40;
const HEIGHT = 20;

/** A w × h square with its top-left corner at (x, y), as runs of rows. */
const square = (x: number, y: number, side: number): RunShape => ({ top: y, runs: Array.from({ length: side }, () => [x, x + side] as const) });

/** The annotation: two 10 px squares. */
const ANNOTATED = [square(2, 2, 10), square(20, 2, 10)];

/** The same squares as a GeoJSON import (outlines on pixel corners). */
function geojsonOf(shapes: RunShape[]): string {
  const features = shapes.map(({ top, runs }) => {
    const [x0, x1] = runs[0] ?? [0, 0];
    const bottom = top + runs.length;
    const ring = [
      [x0, top],
      [x1, top],
      [x1, bottom],
      [x0, bottom],
      [x0, top],
    ];
    return { type: "Feature", properties: {}, geometry: { type: "Polygon", coordinates: [ring] } };
  });
  return JSON.stringify({ type: "FeatureCollection", features });
}

async function importAnnotation(org: TestOrg, imageId: string, shapes: RunShape[]): Promise<string> {
  const form = new FormData();
  form.append("image_id", imageId);
  form.append("file", new File([geojsonOf(shapes)], "cells.geojson"));
  const response = await call("/segmentation", { key: org.key, body: form });
  expect(response.status).toBe(201);
  return (await json<{ segmentation_id: string }>(response)).segmentation_id;
}

/** A model's segmentation of the image, stored as a runner stores one. */
async function predicted(org: TestOrg, imageId: string, model: string, shapes: RunShape[]): Promise<string> {
  const { prediction_id } = await json<{ prediction_id: string }>(await call("/predict", { key: org.key, json: { image_id: imageId, model_id: model } }));
  const job = await leaseJob(prediction_id);
  const rois = roisFromShapes(inRasterOrder(shapes));
  const bytes = await encodeToBytes({ imageWidth: WIDTH, imageHeight: HEIGHT, confluency: 0.25, modelName: model, modelVersion: "1" }, rois);
  const put = await call(job.output.artifact_url, { method: "PUT", body: bytes, headers: { "Content-Length": String(bytes.length) } });
  expect(put.status).toBe(200);
  const result = { roi_count: rois.length, confluency: 0.25, width: WIDTH, height: HEIGHT, diameter: 11 };
  expect((await runner(`/jobs/${prediction_id}/complete`, { lease_token: job.lease_token, result })).status).toBe(200);
  return (await json<{ segmentation_id: string }>(await call(`/predict/${prediction_id}`, { key: org.key }))).segmentation_id;
}

/** What one side of the page says: its title, cells and scores, and how many outlines it draws. */
function side(html: string, segmentationId: string) {
  const section = html.split(`data-segmentation-id="${segmentationId}"`)[1]?.split("</section>")[0] ?? "";
  const text = (name: string) => section.match(new RegExp(`class="${name}">([^<]*)<`))?.[1] ?? null;
  const path = section.match(/<path class="outlines" d="([^"]*)"/)?.[1] ?? "";
  return {
    title: section.match(/<h2>([^<]*)<\/h2>/)?.[1] ?? null,
    cells: text("cells"),
    ap50: text("ap50"),
    ap75: text("ap75"),
    outlines: path.split("M").length - 1,
  };
}

describe("comparing two segmentations of an image", () => {
  it("scores each against the image's imported annotation and draws both over the image", async () => {
    const org = await createOrg();
    const image = await uploadImage(org, "two-cells.png", pngBytes(WIDTH, HEIGHT));
    await importAnnotation(org, image.id, ANNOTATED);
    // One model finds one square exactly and misses the other; the other finds both, 2 px off (IoU 80/120).
    const half = await predicted(org, image.id, "cpsam", [square(2, 2, 10)]);
    const shifted = await predicted(org, image.id, "cpsam-large", [square(4, 2, 10), square(22, 2, 10)]);

    const session = await signIn(org);
    const page = await dashboardCall(session, `/images/${image.id}/compare?a=${half}&b=${shifted}`);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain("AP against the imported annotation of");
    expect(side(html, half)).toEqual({ title: expect.stringMatching(/^cpsam v\d/), cells: "1", ap50: "0.500", ap75: "0.500", outlines: 1 });
    expect(side(html, shifted)).toEqual({ title: expect.stringMatching(/^cpsam-large v\d/), cells: "2", ap50: "1.000", ap75: "0.000", outlines: 2 });
  });

  it("scores a model against the annotation when the annotation is one of the two", async () => {
    const org = await createOrg();
    const image = await uploadImage(org, "two-cells.png", pngBytes(WIDTH, HEIGHT));
    const annotation = await importAnnotation(org, image.id, ANNOTATED);
    const model = await predicted(org, image.id, "cpsam", [square(2, 2, 10)]);
    const html = await (await dashboardCall(await signIn(org), `/images/${image.id}/compare?a=${annotation}&b=${model}`)).text();
    expect(side(html, annotation)).toMatchObject({ title: "imported annotation", cells: "2", ap50: null, outlines: 2 });
    expect(html).toContain("the reference the other is scored against");
    expect(side(html, model)).toMatchObject({ ap50: "0.500", ap75: "0.500" });
  });

  it("without an annotation shows counts and outlines, and says how to add one to score them", async () => {
    const org = await createOrg();
    const image = await uploadImage(org, "two-cells.png", pngBytes(WIDTH, HEIGHT));
    const a = await predicted(org, image.id, "cpsam", [square(2, 2, 10)]);
    const b = await predicted(org, image.id, "cpsam-large", ANNOTATED);
    const html = await (await dashboardCall(await signIn(org), `/images/${image.id}/compare?a=${a}&b=${b}`)).text();
    expect(html).toContain("This image has no imported annotation to score them against");
    expect(side(html, a)).toEqual({ title: expect.stringMatching(/^cpsam v\d/), cells: "1", ap50: null, ap75: null, outlines: 1 });
    expect(side(html, b)).toMatchObject({ cells: "2", ap50: null, outlines: 2 });
  });

  it("bounds the scoring by the image's pixels before reading any: past 32 MP the page says which command scores it", async () => {
    const org = await createOrg();
    const image = await uploadImage(org, "two-cells.png", pngBytes(WIDTH, HEIGHT));
    await importAnnotation(org, image.id, ANNOTATED);
    const a = await predicted(org, image.id, "cpsam", [square(2, 2, 10)]);
    const b = await predicted(org, image.id, "cpsam-large", ANNOTATED);
    // The image's record as a 6000 x 6000 slide's (36 MP); its stored ROIs are unchanged.
    await env.DB.prepare("UPDATE images SET width = 6000, height = 6000 WHERE id = ?").bind(image.id).run();
    const html = await (await dashboardCall(await signIn(org), `/images/${image.id}/compare?a=${a}&b=${b}`)).text();
    expect(html).toContain("AP is computed here for images up to 32 MP; this one has 34 MP: `npm run client -- compare` scores it");
    expect(side(html, a)).toMatchObject({ cells: "1", ap50: null, outlines: 1 });
  });

  it("is offered on the image page once it has two segmentations, the two most recent chosen", async () => {
    const org = await createOrg();
    const image = await uploadImage(org, "two-cells.png", pngBytes(WIDTH, HEIGHT));
    const session = await signIn(org);
    await importAnnotation(org, image.id, ANNOTATED);
    expect(await (await dashboardCall(session, `/images/${image.id}`)).text()).not.toContain('class="compare-form"');
    const model = await predicted(org, image.id, "cpsam", [square(2, 2, 10)]);
    const html = await (await dashboardCall(session, `/images/${image.id}`)).text();
    expect(html).toContain(`action="/dashboard/images/${image.id}/compare"`);
    expect(html).toMatch(new RegExp(`<select name="a"><option value="${model}" selected`));
  });

  it("answers 404 for another organization's segmentation or image, and 422 without two to compare", async () => {
    const org = await createOrg();
    const other = await createOrg();
    const image = await uploadImage(org, "two-cells.png", pngBytes(WIDTH, HEIGHT));
    const mine = await importAnnotation(org, image.id, ANNOTATED);
    const theirImage = await uploadImage(other, "two-cells.png", pngBytes(WIDTH, HEIGHT));
    const theirs = await importAnnotation(other, theirImage.id, ANNOTATED);
    const session = await signIn(org);
    expect((await dashboardCall(session, `/images/${image.id}/compare?a=${mine}&b=${theirs}`)).status).toBe(404);
    expect((await dashboardCall(session, `/images/${theirImage.id}/compare?a=${theirs}&b=${theirs}`)).status).toBe(404);
    expect((await dashboardCall(session, `/images/${image.id}/compare?a=${mine}`)).status).toBe(422);
  });
});
