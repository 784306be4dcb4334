// Physical units end to end: a TIFF's pixel size read at upload, recorded on the image, carried to
// its segmentations (a prediction's `pixel_size_um` overriding it), and the calibrated columns of
// the exports filled from it, or left empty when nothing says how large a pixel is, or when what
// the file says is a screen default or a size no microscope produces (set aside, with a warning).
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import setAside from "../../schema/migrations/0015_pixel_size_warning.sql?raw";
import { encodeRoiArtifact } from "../../common/roi-artifact/writer.ts";
import type { Roi } from "../../schema/roi.ts";
import { tracedPerimeter } from "../../common/geometry/roi-measure.ts";
import imagejTiff from "../reference/tiff/imagej-0.5um.tif?inline";
import omeTiff from "../reference/tiff/ome-325nm-2ch.ome.tif?inline";
import oblongTiff from "../reference/tiff/ome-nm-oblong.ome.tif?inline";
import plainTiff from "../reference/tiff/plain-none.tif?inline";
import { call, createOrg, json, multipartFile, RUNNER_TOKEN, type TestOrg } from "./helpers.ts";
import { formatMeasurement } from "../../schema/measurements.ts";

/** A number as the exports write it (rounded by formatMeasurement), parsed back. */
const exported = (value: number) => Number(formatMeasurement(value));
import { dashboardCall, signIn } from "./dashboard-helpers.ts";
import { leaseJob } from "./runner-helpers.ts";
import { encodeTiff } from "../fixtures/tiff-writer.ts";
import { cutTiles, encodeDicomLevel, TRANSFER_SYNTAX } from "../fixtures/dicom-writer.ts";
import { encodeOmeZarrZip } from "../fixtures/ome-zarr-writer.ts";
import { encodeNdpi } from "../fixtures/ndpi-writer.ts";

const bytesOf = (dataUrl: string) => Uint8Array.from(atob(dataUrl.slice(dataUrl.indexOf(",") + 1)), (c) => c.charCodeAt(0));

async function upload(org: TestOrg, name: string, file: string | Uint8Array) {
  const response = await call("/upload", { key: org.key, body: multipartFile(name, typeof file === "string" ? bytesOf(file) : file) });
  expect(response.status).toBe(201);
  return (await json<{ image: { id: string; format: string; pixel_size: unknown; pixel_size_warning: unknown; channel_names: unknown } }>(response)).image;
}

/** An 8 x 6 grey TIFF saved at 96 dpi, as many programs save whatever they save (Kromp et al.'s nuclei among them). */
const screenDefaultTiff = encodeTiff([{ width: 8, height: 6, samplesPerPixel: 1, kind: "uint8", values: new Uint8Array(48), resolution: { x: 96, unit: 2 } }]);

/** Two cells on the 8 x 6 image, a 2 x 3 rectangle and a 3 x 2 one, measured as the engine measures. */
const RECTANGLE_PERIMETER = tracedPerimeter(new Int32Array([1, 1, 3, 1, 3, 4, 1, 4])); // 10 − 4·(2 − √2)
const CELLS: Roi[] = [
  {
    index: 0,
    polygon: new Int32Array([1, 1, 3, 1, 3, 4, 1, 4]),
    area_px: 6,
    perimeter_px: RECTANGLE_PERIMETER,
    centroid_x: 2,
    centroid_y: 2.5,
    bbox_x: 1,
    bbox_y: 1,
    bbox_w: 2,
    bbox_h: 3,
  },
  {
    index: 1,
    polygon: new Int32Array([4, 2, 7, 2, 7, 4, 4, 4]),
    area_px: 6,
    perimeter_px: RECTANGLE_PERIMETER,
    centroid_x: 5.5,
    centroid_y: 3,
    bbox_x: 4,
    bbox_y: 2,
    bbox_w: 3,
    bbox_h: 2,
  },
];

/** A prediction of the image taken to COMPLETED by a runner that found CELLS; its segmentation id. */
async function segment(org: TestOrg, imageId: string, params: Record<string, unknown> = {}): Promise<string> {
  const submitted = await json<{ prediction_id: string }>(await call("/predict", { key: org.key, json: { image_id: imageId, model_id: "cpsam", params } }));
  const job = await leaseJob(submitted.prediction_id);
  const chunks: Uint8Array[] = [];
  for await (const chunk of encodeRoiArtifact({ imageWidth: 8, imageHeight: 6, confluency: 0.25, modelName: "cpsam", modelVersion: "3" }, CELLS))
    chunks.push(chunk);
  const body = new Uint8Array(await new Blob(chunks).arrayBuffer());
  expect((await call(job.output.artifact_url, { method: "PUT", body, headers: { "Content-Length": String(body.length) } })).status).toBe(200);
  const done = await call(`/internal/jobs/${job.job_id}/complete`, {
    key: RUNNER_TOKEN,
    json: { lease_token: job.lease_token, result: { roi_count: 2, confluency: 0.25, width: 8, height: 6 } },
  });
  expect(done.status).toBe(200);
  return (await json<{ segmentation_id: string }>(await call(`/predict/${submitted.prediction_id}`, { key: org.key }))).segmentation_id;
}

async function calibratedCsv(org: TestOrg, segmentationId: string): Promise<Record<string, string | undefined>[]> {
  const text = await (await call(`/export/${segmentationId}/measurements.csv?columns=roi_index&columns=calibrated`, { key: org.key })).text();
  const [header, ...rows] = text
    .trim()
    .split("\r\n")
    .map((line) => line.split(","));
  // split gives at least one line, so there is a header (a row short of fields reads undefined where it ends).
  return rows.map((row) => Object.fromEntries(header!.map((name, i) => [name, row[i]])));
}

describe("the pixel size, from the file to the calibrated columns", () => {
  it("reads an OME-TIFF's size and channel names at upload and keeps them on the image record", async () => {
    const org = await createOrg();
    const image = await upload(org, "stained.ome.tif", omeTiff);
    expect(image.pixel_size).toEqual({ x_um: 0.325, y_um: 0.325, source: "ome" });
    expect(image.channel_names).toEqual(["DAPI", "Alexa 488 (GFP)"]);
    expect(await json(await call(`/image/${image.id}`, { key: org.key }))).toMatchObject({ pixel_size: { x_um: 0.325, source: "ome" } });
    const imagej = await upload(org, "imagej.tif", imagejTiff);
    expect(imagej.pixel_size).toEqual({ x_um: 0.5, y_um: 0.5, source: "imagej" });
    expect(imagej.channel_names).toBeNull();
  });

  it("reads a DICOM whole-slide level's PixelSpacing (mm, row spacing first) and objective at upload", async () => {
    const org = await createOrg();
    const level = encodeDicomLevel({
      width: 40,
      height: 30,
      tileWidth: 16,
      tileHeight: 16,
      samplesPerPixel: 3,
      photometric: "RGB",
      transferSyntax: TRANSFER_SYNTAX.explicitLittle,
      frames: cutTiles(new Uint8Array(40 * 30 * 3).fill(200), 40, 30, 3, 16, 16),
      pixelSpacingMm: [0.0005, 0.00025],
      objectivePower: 20,
    });
    const image = await upload(org, "level-0.dcm", level);
    expect(image).toMatchObject({
      format: "dicom",
      format_name: "DICOM whole-slide",
      width: 40,
      height: 30,
      channels: 3,
      levels: [{ width: 40, height: 30 }],
      level_read: 0,
      objective_magnification: 20,
      pixel_size: { x_um: 0.25, y_um: 0.5, source: "dicom" },
    });
  });

  it("reads a zipped OME-Zarr's scale in its axes' unit at upload, and names it with its levels", async () => {
    const org = await createOrg();
    const store = await encodeOmeZarrZip({
      version: 2,
      width: 40,
      height: 30,
      channels: 2,
      chunk: [16, 16],
      dataType: "uint16",
      codec: "zlib",
      value: (c, y, x) => c + y + x,
      pixelSizeUm: 0.325,
      levels: 1,
    });
    const image = await upload(org, "plate.zarr.zip", store);
    expect(image).toMatchObject({
      format: "zarr",
      format_name: "OME-Zarr (NGFF 0.4)",
      channels: 2,
      levels: [
        { width: 40, height: 30 },
        { width: 20, height: 15 },
      ],
      pixel_size: { x_um: 0.325, y_um: 0.325, source: "ome-zarr" },
    });
  });

  it("names an Aperio SVS, its pyramid's levels and its objective on the record and the dashboard's image page", async () => {
    const org = await createOrg();
    const tissue = (w: number, h: number) => new Uint8Array(w * h * 3).fill(180);
    const description = "Aperio Image Library v11.0.37\r\n64x48 (32x32) JPEG/RGB Q=70|AppMag = 40|MPP = 0.2520";
    const svs = encodeTiff([
      { width: 64, height: 48, samplesPerPixel: 3, kind: "uint8", values: tissue(64, 48), compression: "lzw", tile: { width: 32, height: 32 }, description },
      { width: 16, height: 12, samplesPerPixel: 3, kind: "uint8", values: tissue(16, 12), compression: "lzw", description: "Aperio Image Library\nthumbnail" },
      {
        width: 32,
        height: 24,
        samplesPerPixel: 3,
        kind: "uint8",
        values: tissue(32, 24),
        compression: "lzw",
        tile: { width: 32, height: 32 },
        description: "Aperio",
      },
    ]);
    const image = await upload(org, "slide.svs", svs);
    expect(image).toMatchObject({
      format: "tiff",
      format_name: "Aperio SVS",
      levels: [
        { width: 64, height: 48 },
        { width: 32, height: 24 },
      ],
      level_read: 0,
      objective_magnification: 40,
      pixel_size: { x_um: 0.252, y_um: 0.252, source: "aperio" },
    });
    const page = await (await dashboardCall(await signIn(org), `/images/${image.id}`)).text();
    expect(page).toContain('<dd id="format">Aperio SVS</dd>');
    expect(page).toMatch(/<dd id="pyramid">full resolution read; 1 reduced level: 32 × 24<\/dd>/);
    expect(page).toContain('<dd id="objective">40x</dd>');
  });

  it("names a Hamamatsu NDPI, reads its restart-marked level's size, its resolution tags and objective, and not its macro", async () => {
    const org = await createOrg();
    const tissue = (w: number, h: number) => new Uint8Array(w * h * 3).fill(180);
    const ndpi = encodeNdpi([
      { width: 256, height: 24, rgb: tissue(256, 24), interval: 4, sourceLens: 40, resolution: 40_000 },
      { width: 64, height: 6, rgb: tissue(64, 6), sourceLens: 10, resolution: 10_000 },
      { width: 90, height: 30, rgb: tissue(90, 30), sourceLens: -1 },
    ]);
    const image = await upload(org, "slide.ndpi", ndpi);
    expect(image).toMatchObject({
      format: "tiff",
      format_name: "Hamamatsu NDPI",
      width: 256,
      height: 24,
      levels: [
        { width: 256, height: 24 },
        { width: 64, height: 6 },
      ],
      level_read: 0,
      objective_magnification: 40,
      pixel_size: { x_um: 0.25, y_um: 0.25, source: "tiff" },
    });
  });

  it("fills the calibrated columns of the segmentation with the file's size: µm and µm²", async () => {
    const org = await createOrg();
    const image = await upload(org, "stained.ome.tif", omeTiff);
    const id = await segment(org, image.id);
    expect(await json(await call(`/segmentation/${id}`, { key: org.key }))).toMatchObject({ pixel_size: { x_um: 0.325, y_um: 0.325, source: "ome" } });
    const rows = await calibratedCsv(org, id);
    expect(rows).toHaveLength(CELLS.length);
    const [first, second] = [rows[0]!, rows[1]!];
    const s = 0.325;
    expect(Object.keys(first)).toEqual([
      "roi_index",
      "pixel_size_x_um",
      "pixel_size_y_um",
      "area_um2",
      "perimeter_um",
      "centroid_x_um",
      "centroid_y_um",
      "major_axis_um",
      "minor_axis_um",
      "feret_max_um",
      "equivalent_diameter_um",
    ]);
    expect(Number(first.pixel_size_x_um)).toBe(exported(s));
    expect(Number(first.area_um2)).toBe(exported(6 * s * s));
    expect(Number(first.perimeter_um)).toBe(exported(RECTANGLE_PERIMETER * s));
    expect(Number(first.centroid_x_um)).toBe(exported(2 * s));
    expect(Number(first.centroid_y_um)).toBe(exported(2.5 * s));
    expect(Number(first.feret_max_um)).toBeCloseTo(Math.hypot(2, 3) * s, 4);
    expect(Number(first.equivalent_diameter_um)).toBeCloseTo(Math.sqrt((4 * 6 * s * s) / Math.PI), 4);
    // A 2 x 3 block of pixel centres: variances (2² − 1)/12 and (3² − 1)/12.
    expect(Number(first.major_axis_um)).toBeCloseTo(4 * Math.sqrt(8 / 12) * s, 4);
    expect(Number(first.minor_axis_um)).toBeCloseTo(4 * Math.sqrt(3 / 12) * s, 4);
    expect(Number(second.area_um2)).toBe(exported(6 * s * s));

    // Outlines corrected in Fiji and imported again are measured with the image's size too.
    const zip = new Uint8Array(await (await call(`/export/${id}/rois.zip`, { key: org.key })).arrayBuffer());
    const form = multipartFile("corrected.zip", zip);
    form.append("image_id", image.id);
    const imported = await json<{ segmentation_id: string }>(await call("/segmentation", { key: org.key, body: form }));
    expect(await json(await call(`/segmentation/${imported.segmentation_id}`, { key: org.key }))).toMatchObject({
      source: "import",
      pixel_size: { x_um: 0.325, y_um: 0.325, source: "ome" },
    });
    expect((await calibratedCsv(org, imported.segmentation_id))[0]?.area_um2).toBe(first.area_um2);
  });

  it("gives the dashboard's viewer the size for its scale bar, and says where it came from", async () => {
    const org = await createOrg();
    const image = await upload(org, "stained.ome.tif", omeTiff);
    const plain = await upload(org, "plain.tif", plainTiff);
    const session = await signIn(org);
    const viewer = await (await dashboardCall(session, `/segmentations/${await segment(org, image.id)}`)).text();
    expect(viewer).toContain('data-pixel-size-x-um="0.325"');
    expect(viewer).toMatch(/<dt>Pixel size<\/dt><dd>0.325 µm \(OME-XML\)<\/dd>/);
    const imagePage = await (await dashboardCall(session, `/images/${image.id}`)).text();
    expect(imagePage).toContain('data-pixel-size-x-um="0.325"');
    expect(imagePage).toMatch(/<dd id="pixel-size">0.325 µm \(OME-XML\)<\/dd>/);
    const uncalibrated = await (await dashboardCall(session, `/segmentations/${await segment(org, plain.id)}`)).text();
    expect(uncalibrated).not.toContain("data-pixel-size-x-um");
    expect(uncalibrated).toMatch(/<dt>Pixel size<\/dt><dd>unknown: no µm measurements<\/dd>/);
  });

  it("takes the prediction's pixel_size_um over the file's, and says it was given", async () => {
    const org = await createOrg();
    const image = await upload(org, "stained.ome.tif", omeTiff);
    const id = await segment(org, image.id, { pixel_size_um: 0.5 });
    expect(await json(await call(`/segmentation/${id}`, { key: org.key }))).toMatchObject({ pixel_size: { x_um: 0.5, y_um: 0.5, source: "given" } });
    const [first] = await calibratedCsv(org, id);
    expect([first?.pixel_size_x_um, first?.area_um2, first?.perimeter_um]).toEqual(["0.5", "1.5", formatMeasurement(RECTANGLE_PERIMETER * 0.5)]);
  });

  it("measures oblong pixels in µm as ImageJ and regionprops with spacing do", async () => {
    const org = await createOrg();
    const image = await upload(org, "oblong.ome.tif", oblongTiff);
    expect(image.pixel_size).toEqual({ x_um: 0.65, y_um: 1.3, source: "ome" });
    const [first] = await calibratedCsv(org, await segment(org, image.id));
    expect(Number(first?.area_um2)).toBeCloseTo(6 * 0.65 * 1.3, 4);
    // ImageJ's traced perimeter with w x h pixels: the sides in µm, less w + h − √(w² + h²) at each of the 4 corners.
    expect(Number(first?.perimeter_um)).toBeCloseTo(2 * 2 * 0.65 + 2 * 3 * 1.3 - 4 * (0.65 + 1.3 - Math.hypot(0.65, 1.3)), 4);
    expect(Number(first?.feret_max_um)).toBeCloseTo(Math.hypot(2 * 0.65, 3 * 1.3), 4);
    expect(Number(first?.major_axis_um)).toBeCloseTo(4 * Math.sqrt((8 / 12) * 1.3 * 1.3), 4);
  });

  it("leaves the calibrated columns empty when the file has no size and none is given, and refuses a size that is no size", async () => {
    const org = await createOrg();
    const image = await upload(org, "plain.tif", plainTiff);
    expect(image.pixel_size).toBeNull();
    const id = await segment(org, image.id);
    expect(await json(await call(`/segmentation/${id}`, { key: org.key }))).toMatchObject({ pixel_size: null });
    const rows = await calibratedCsv(org, id);
    expect(rows).toHaveLength(2);
    for (const row of rows) for (const [name, value] of Object.entries(row)) if (name !== "roi_index") expect(value, name).toBe("");
    const geojson = await json<{ features: { properties: Record<string, unknown> }[] }>(
      await call(`/export/${id}/rois.geojson?columns=area_um2`, { key: org.key }),
    );
    expect(geojson.features[0]?.properties).toEqual({ area_um2: null, objectType: "detection" });
    for (const pixel_size_um of [0, -1, "0.5"]) {
      const refused = await call("/predict", { key: org.key, json: { image_id: image.id, model_id: "cpsam", params: { pixel_size_um } } });
      expect(refused.status, String(pixel_size_um)).toBe(422);
    }
  });

  it("accepts a cell expansion in µm only where the pixel size is known, and hands the runner the size", async () => {
    const org = await createOrg();
    const plain = await upload(org, "plain.tif", plainTiff);
    const predict = (imageId: string, params: Record<string, unknown>) =>
      call("/predict", { key: org.key, json: { image_id: imageId, model_id: "cpsam", params } });
    const refused = await predict(plain.id, { cell_expansion_um: 5 });
    expect(refused.status).toBe(422);
    const [issue] = (await json<{ detail: { loc: unknown[]; msg: string }[] }>(refused)).detail;
    expect(issue!.loc).toEqual(["body", "params", "cell_expansion_um"]);
    expect(issue!.msg).toMatch(/needs the pixel size.*add pixel_size_um, or give cell_expansion_px/);
    const both = await predict(plain.id, { cell_expansion_um: 5, cell_expansion_px: 5 });
    expect(both.status).toBe(422);
    expect(JSON.stringify(await json(both))).toContain("Give cell_expansion_um or cell_expansion_px, not both");
    const given = await predict(plain.id, { cell_expansion_um: 5, pixel_size_um: 0.5 });
    expect(given.status).toBe(202);

    // Another organization (one prediction at a time each): the file's size is enough.
    const other = await createOrg();
    const ome = await upload(other, "stained.ome.tif", omeTiff);
    const submitted = await call("/predict", { key: other.key, json: { image_id: ome.id, model_id: "cpsam", params: { cell_expansion_um: 5 } } });
    expect(submitted.status).toBe(202);
    const { prediction_id } = await json<{ prediction_id: string }>(submitted);
    const job = (await leaseJob(prediction_id)) as unknown as { params: Record<string, unknown>; image: Record<string, unknown> };
    expect(job.params).toMatchObject({ cell_expansion_um: 5 });
    expect(job.image).toMatchObject({ pixel_size_um: { x: 0.325, y: 0.325 }, channel_names: ["DAPI", "Alexa 488 (GFP)"] });
  });

  it("takes no size from a 96 dpi file: a warning on the image and the dashboard, and no µm in the exports", async () => {
    const org = await createOrg();
    const image = await upload(org, "kromp.tif", screenDefaultTiff);
    const warning = "The file's resolution, 96 dpi, is a screen or print default, not a microscope's calibration";
    expect(image).toMatchObject({ pixel_size: null, pixel_size_warning: warning });
    expect(await json(await call(`/image/${image.id}`, { key: org.key }))).toMatchObject({ pixel_size: null, pixel_size_warning: warning });
    const id = await segment(org, image.id);
    expect(await json(await call(`/segmentation/${id}`, { key: org.key }))).toMatchObject({ pixel_size: null });
    for (const row of await calibratedCsv(org, id)) for (const [name, value] of Object.entries(row)) if (name !== "roi_index") expect(value, name).toBe("");
    const session = await signIn(org);
    const imagePage = await (await dashboardCall(session, `/images/${image.id}`)).text();
    expect(imagePage).toContain(`<p class="warning" id="pixel-size-warning">${warning.replaceAll("'", "&#39;")}</p>`);
    expect(imagePage).not.toContain("data-pixel-size-x-um");
    // A cell expansion in µm needs a size the file does not give.
    const expansion = await call("/predict", { key: org.key, json: { image_id: image.id, model_id: "cpsam", params: { cell_expansion_um: 5 } } });
    expect(expansion.status).toBe(422);
  });

  it("refuses a given size outside the 0.01-50 µm microscopes produce, naming the range", async () => {
    const org = await createOrg();
    const image = await upload(org, "plain.tif", plainTiff);
    for (const pixel_size_um of [1e-4, 0.0099, 50.01, 500]) {
      const refused = await call("/predict", { key: org.key, json: { image_id: image.id, model_id: "cpsam", params: { pixel_size_um } } });
      expect(refused.status, String(pixel_size_um)).toBe(422);
      const [issue] = (await json<{ detail: { loc: unknown[]; msg: string }[] }>(refused)).detail;
      expect(issue).toMatchObject({ loc: ["body", "params", "pixel_size_um"], msg: "pixel_size_um is 0.01 to 50 µm, the pixel sizes microscopes produce" });
    }
  });

  it("sets aside the sizes stored before calibrations were checked (migration 0015), and their segmentations' copies", async () => {
    const org = await createOrg();
    const kromp = await upload(org, "kromp.tif", plainTiff);
    const tiny = await upload(org, "tiny.tif", plainTiff);
    const ome = await upload(org, "stained.ome.tif", omeTiff);
    const [fromFile, given] = [await segment(org, kromp.id), await segment(org, kromp.id, { pixel_size_um: 0.5 })];
    const size = (table: string, id: string, x: number, y: number, source: string) =>
      env.DB.prepare(`UPDATE ${table} SET pixel_size_x_um = ?, pixel_size_y_um = ?, pixel_size_source = ? WHERE id = ?`).bind(x, y, source, id).run();
    await size("images", kromp.id, 25_400 / 96, 25_400 / 96, "tiff");
    await size("images", tiny.id, 1e-4, 2e-4, "imagej");
    await size("segmentations", fromFile, 25_400 / 96, 25_400 / 96, "tiff");
    await size("segmentations", given, 500, 500, "given");
    for (const statement of setAside.split("--> statement-breakpoint").slice(1)) await env.DB.prepare(statement).run();

    expect(await json(await call(`/image/${kromp.id}`, { key: org.key }))).toMatchObject({
      pixel_size: null,
      pixel_size_warning: "The file's pixel size, 264.583 µm (the TIFF resolution tags), is outside the 0.01-50 µm that microscopes produce",
    });
    expect(await json(await call(`/image/${tiny.id}`, { key: org.key }))).toMatchObject({
      pixel_size: null,
      pixel_size_warning: "The file's pixel size, 0.0001 × 0.0002 µm (ImageJ's calibration), is outside the 0.01-50 µm that microscopes produce",
    });
    expect(await json(await call(`/image/${ome.id}`, { key: org.key }))).toMatchObject({ pixel_size: { x_um: 0.325 }, pixel_size_warning: null });
    expect(await json(await call(`/segmentation/${fromFile}`, { key: org.key }))).toMatchObject({ pixel_size: null });
    expect((await calibratedCsv(org, fromFile))[0]?.area_um2).toBe("");
    // What a user gave stays theirs (the API refuses such a size from now on).
    expect(await json(await call(`/segmentation/${given}`, { key: org.key }))).toMatchObject({ pixel_size: { x_um: 500, source: "given" } });
  });
});
