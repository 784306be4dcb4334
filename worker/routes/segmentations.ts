import { createRoute } from "@hono/zod-openapi";
import { segmentationListQuery, segmentationPath } from "../../schema/api.ts";
import { segmentationImported, segmentationPage, segmentationRecord } from "../../schema/api-records.ts";
import { notFound } from "../errors.ts";
import { apiRouter, errorResponses, jsonResponse } from "../openapi/router.ts";
import { deleteSegmentation, importSegmentation } from "../services/segmentation-imports.ts";
import { getSegmentation, listSegmentations, segmentationRecordOf } from "../services/segmentations.ts";

export const segmentationRoutes = apiRouter();

const tags = ["Segmentations"];

const list = createRoute({
  method: "get",
  path: "/segmentations",
  operationId: "listSegmentations",
  tags,
  summary: "The organization's segmentations",
  description: "Newest first, a page at a time; `image_id` keeps one image's.",
  request: { query: segmentationListQuery },
  responses: { 200: jsonResponse(segmentationPage, "A page of segmentations"), ...errorResponses() },
});

segmentationRoutes.openapi(list, async (c) => {
  const { image_id, limit, cursor } = c.req.valid("query");
  return c.json(await listSegmentations(c.env.DB, c.get("org").id, image_id, { limit, cursor }), 200);
});

const one = createRoute({
  method: "get",
  path: "/segmentation/{segmentation_id}",
  operationId: "getSegmentation",
  tags,
  summary: "A segmentation's summary",
  request: { params: segmentationPath },
  responses: { 200: jsonResponse(segmentationRecord, "The segmentation"), ...errorResponses(404) },
});

segmentationRoutes.openapi(one, async (c) => {
  const { segmentation_id } = c.req.valid("param");
  const segmentation = await getSegmentation(c.env.DB, c.get("org").id, segmentation_id);
  if (!segmentation) throw notFound("Segmentation", segmentation_id);
  return c.json(await segmentationRecordOf(c.env.DB, segmentation), 200);
});

// The multipart body is described, not validated by a zod schema on the route: the service reads
// the parts itself with its limits (a zod body would make the validator buffer and parse it first).
const importOne = createRoute({
  method: "post",
  path: "/segmentation",
  operationId: "importSegmentation",
  tags,
  summary: "Import a corrected segmentation",
  description:
    "Multipart: field `image_id` and part `file`: a label image (PNG 8/16-bit, TIFF 8/16/32-bit, the image's size, 0 = background), " +
    "an ImageJ `.roi` or ROI Manager `.zip`, or QuPath GeoJSON in image pixel coordinates. A later object wins shared pixels. " +
    "Not an analysis: it does not count against the monthly cap. It is stored, so it counts against the image storage cap " +
    "(images and imported segmentations together) until it is deleted: 402 once the cap is reached. Its intensities are measured " +
    "by a runner afterwards; 429 (with Retry-After) while the organization already has the most imports being measured at once.",
  request: {
    body: {
      required: true,
      content: {
        "multipart/form-data": {
          schema: {
            type: "object",
            required: ["image_id", "file"],
            properties: { image_id: { type: "string" }, file: { type: "string", format: "binary", description: "The annotation file" } },
          },
        },
      },
    },
  },
  responses: { 201: jsonResponse(segmentationImported, "The imported segmentation"), ...errorResponses(400, 402, 404, 409, 413, 415, 429) },
});

segmentationRoutes.openapi(importOne, async (c) => {
  const segmentation = await importSegmentation(c.env, c.get("org"), c.req.raw);
  const { measurements } = await segmentationRecordOf(c.env.DB, segmentation);
  return c.json(
    { segmentation_id: segmentation.id, image_id: segmentation.imageId, source: "import" as const, cell_count: segmentation.roiCount, measurements },
    201,
  );
});

const deleteOne = createRoute({
  method: "delete",
  path: "/segmentation/{segmentation_id}",
  operationId: "deleteSegmentation",
  tags,
  summary: "Delete a segmentation",
  description:
    "Removes a segmentation, imported or predicted, and its ROI artifact. 409 while a queued or running training learns from it " +
    "(delete it once that job has finished).",
  request: { params: segmentationPath },
  responses: { 204: { description: "Deleted" }, ...errorResponses(404, 409) },
});

segmentationRoutes.openapi(deleteOne, async (c) => {
  const { segmentation_id } = c.req.valid("param");
  const segmentation = await getSegmentation(c.env.DB, c.get("org").id, segmentation_id);
  if (!segmentation) throw notFound("Segmentation", segmentation_id);
  await deleteSegmentation(c.env, segmentation);
  return c.body(null, 204);
});
