// GET /export/{segmentation_id}/{file}: streamed straight from the ROI artifact in R2, one route
// per file so each is described with its own media type.
import { createRoute, z } from "@hono/zod-openapi";
import { segmentationPath } from "../../schema/api.ts";
import { MEASUREMENT_GROUPS } from "../../schema/measurements.ts";
import { MEASUREMENT_COLUMNS } from "../../common/measurement-columns.ts";
import type { AppContext } from "../env.ts";
import { RoiArtifactError } from "../../schema/roi-artifact.ts";
import { HttpError, notFound } from "../errors.ts";
import { contentDisposition, EXPORTS, exportContext, exportErrorStatus, type ExportFormatName, type ExportOptions } from "../exports/index.ts";
import { apiRouter, errorResponses } from "../openapi/router.ts";
import { getSegmentation, type Segmentation, segmentationRecordOf } from "../services/segmentations.ts";
import { UnknownMeasurementColumnsError } from "../../common/measurement-columns.ts";

export const exportRoutes = apiRouter();

// Hono hands a query key given once as a string and given repeatedly as an array.
const columnsParameter = (what: string) =>
  z
    .preprocess((value) => (typeof value === "string" ? [value] : value), z.array(z.string().min(1).max(100)).max(100))
    .optional()
    .meta({
      description:
        `${what}, in order; repeat the parameter once per column or group. A group's name stands for its columns: ` +
        `${Object.entries(MEASUREMENT_GROUPS)
          .map(([name, text]) => `\`${name}\` (${text})`)
          .join("; ")}. A column asked for twice comes once, where first asked for. Omitted: the \`default\` group. ` +
        `Columns: ${MEASUREMENT_COLUMNS.map((column) => `\`${column.name}\` (${column.group}): ${column.description}`).join("; ")}.`,
    });

const csvColumnsQuery = z.object({ columns: columnsParameter("Columns of the CSV") });
const geoJsonQuery = z.object({
  columns: columnsParameter("Measurement columns carried as each feature's properties (before QuPath's `objectType`)"),
  objects: z.enum(["detection", "cell"]).optional().meta({
    description:
      "`detection` (the default): one feature per nucleus, QuPath's detections. `cell`: QuPath's cell objects, the cell grown by the prediction's cell expansion as `geometry` and its nucleus as `nucleusGeometry`, `objectType` `cell`; a segmentation without cells: 422",
  }),
});

const file = (description: string, ...mediaTypes: string[]) => ({
  description,
  headers: { "Content-Disposition": { description: "attachment; the file name is the image's with the export's suffix", schema: { type: "string" as const } } },
  content: Object.fromEntries(mediaTypes.map((type) => [type, { schema: { type: "string" as const, format: "binary" } }])),
});

async function streamExport(c: AppContext, format: ExportFormatName, id: string, options: ExportOptions): Promise<Response> {
  const segmentation = await getSegmentation(c.env.DB, c.get("org").id, id);
  if (!segmentation) throw notFound("Segmentation", id);
  const artifact = await c.env.BUCKET.get(segmentation.artifactKey);
  if (!artifact) throw new HttpError(404, `Segmentation ${id} has no stored ROIs`);
  // masks.tif reads the artifact twice (worker/exports/label-tiff.ts); the key never changes.
  const reread = async () => {
    const again = await c.env.BUCKET.get(segmentation.artifactKey);
    if (!again) throw new RoiArtifactError(`the ROI artifact of segmentation ${id} disappeared during the export`);
    return again.body;
  };
  try {
    const file = await EXPORTS[format](artifact.body, exportContext(segmentation), options, reread);
    return new Response(file.body, {
      headers: { "Content-Type": file.contentType, "Content-Disposition": contentDisposition(file.fileName), "Cache-Control": "private, no-store" },
    });
  } catch (error) {
    const status = exportErrorStatus(error);
    if (status === 500) {
      console.error(`ROI artifact of segmentation ${id} is unreadable`, error);
      throw new HttpError(500, `The stored ROIs of segmentation ${id} are damaged; run the prediction again`);
    }
    if (status === null) throw error;
    const message = error instanceof Error ? error.message : String(error);
    throw new HttpError(status, error instanceof UnknownMeasurementColumnsError ? `${message}${await unmeasuredNote(c, segmentation)}` : message);
  }
}

/** Why an import has no intensity columns yet, when it has none: its measurement's state. */
async function unmeasuredNote(c: AppContext, segmentation: Segmentation): Promise<string> {
  const { measurements } = await segmentationRecordOf(c.env.DB, segmentation);
  if (measurements.status === "measuring")
    return `. Segmentation ${segmentation.id} is an import whose intensities are still being measured from the image: ask again once GET /segmentation/${segmentation.id} says measurements.status "measured"`;
  if (measurements.status === "failed" || measurements.status === "not_measured")
    return `. Segmentation ${segmentation.id} has no intensities: ${measurements.detail}`;
  return "";
}

const tags = ["Exports"];

/** measurements.csv's description: every column group, from the one list of them (schema/measurements.ts), so none is left out. */
const MEASUREMENTS_CSV_DESCRIPTION = `One row per cell. Without \`columns\`, the 20 columns of the \`default\` group in their order (image_name ... bbox_h); every other column is asked for by name or by group, repeating \`columns\`. The groups: ${Object.entries(
  MEASUREMENT_GROUPS,
)
  .map(([name, what]) => `\`${name}\`: ${what}`)
  .join(
    "; ",
  )}. Numbers are rounded to 6 significant digits, never fewer than 4 decimals; whole numbers exactly. An unknown column: 400 naming it and listing the valid columns and groups.`;

exportRoutes.openapi(
  createRoute({
    method: "get",
    path: "/export/{segmentation_id}/measurements.csv",
    operationId: "exportMeasurementsCsv",
    tags,
    summary: "Measurements, one row per cell (CSV)",
    description: MEASUREMENTS_CSV_DESCRIPTION,
    request: { params: segmentationPath, query: csvColumnsQuery },
    responses: { 200: file("The measurements", "text/csv"), ...errorResponses(400, 404) },
  }),
  (c) => streamExport(c, "measurements.csv", c.req.valid("param").segmentation_id, { columns: c.req.valid("query").columns }),
);

exportRoutes.openapi(
  createRoute({
    method: "get",
    path: "/export/{segmentation_id}/rois.geojson",
    operationId: "exportRoisGeoJson",
    tags,
    summary: "Cell outlines as GeoJSON",
    description:
      "A FeatureCollection with one polygon feature per cell, in image pixel coordinates. Each feature's properties are the measurement columns chosen by `columns` (the `default` group when omitted), as in measurements.csv, then `objectType` for QuPath. An unknown column: 400.",
    request: { params: segmentationPath, query: geoJsonQuery },
    responses: { 200: file("The ROIs", "application/geo+json"), ...errorResponses(400, 404) },
  }),
  (c) =>
    streamExport(c, "rois.geojson", c.req.valid("param").segmentation_id, { columns: c.req.valid("query").columns, objects: c.req.valid("query").objects }),
);

exportRoutes.openapi(
  createRoute({
    method: "get",
    path: "/export/{segmentation_id}/rois.zip",
    operationId: "exportRoisZip",
    tags,
    summary: "Cell outlines as an ImageJ ROI archive",
    description: "One ImageJ `.roi` file per cell in a ZIP, for ImageJ/Fiji's ROI Manager.",
    request: { params: segmentationPath },
    responses: { 200: file("The ROI archive", "application/zip"), ...errorResponses(404) },
  }),
  (c) => streamExport(c, "rois.zip", c.req.valid("param").segmentation_id, {}),
);

exportRoutes.openapi(
  createRoute({
    method: "get",
    path: "/export/{segmentation_id}/masks.png",
    operationId: "exportMasksPng",
    tags,
    summary: "Label mask as a 16-bit PNG (up to 65,535 cells)",
    description:
      "Each cell's pixels carry its 1-based index (`roi_index`), 0 is background, in a 16-bit grayscale PNG. A segmentation of more than 65,535 cells does not fit 16 bits: it is answered 422 with a `detail` naming the cell count and `masks.tif`, which holds any number of cells.",
    request: { params: segmentationPath },
    responses: { 200: file("The label mask", "image/png"), ...errorResponses(404) },
  }),
  (c) => streamExport(c, "masks.png", c.req.valid("param").segmentation_id, {}),
);

exportRoutes.openapi(
  createRoute({
    method: "get",
    path: "/export/{segmentation_id}/masks.tif",
    operationId: "exportMasksTiff",
    tags,
    summary: "Label mask as a 32-bit tiled TIFF (any number of cells)",
    description:
      "The label image of masks.png with 32-bit labels, for any number of cells: each cell's pixels carry its 1-based index (`roi_index`), 0 is background. An unsigned 32-bit grayscale TIFF cut into tiles (256 x 256, shorter for very wide images), each Deflate-compressed (Adobe Deflate, compression 8); BigTIFF when the file passes 4 GiB. Opens in tifffile and napari, QuPath, and Fiji through Bio-Formats (ImageJ's own TIFF reader opens no tiled TIFF). Use it above 65,535 cells, or for whole slides.",
    request: { params: segmentationPath },
    responses: { 200: file("The label mask", "image/tiff"), ...errorResponses(404) },
  }),
  (c) => streamExport(c, "masks.tif", c.req.valid("param").segmentation_id, {}),
);
