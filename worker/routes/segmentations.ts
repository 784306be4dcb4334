import { createRoute } from "@hono/zod-openapi";
import { segmentationListQuery, segmentationPath } from "../../schema/api.ts";
import { segmentationPage, segmentationRecord } from "../../schema/api-records.ts";
import { notFound } from "../errors.ts";
import { apiRouter, errorResponses, jsonResponse } from "../openapi/router.ts";
import { getSegmentation, listSegmentations, segmentationView } from "../services/segmentations.ts";

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
  return c.json(segmentationView(segmentation), 200);
});
