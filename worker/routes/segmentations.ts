import { Hono } from "hono";
import { pathId, segmentationListQuery } from "../../schema/api.ts";
import type { AppEnv } from "../env.ts";
import { notFound } from "../errors.ts";
import { getSegmentation, listSegmentations, segmentationView } from "../services/segmentations.ts";
import { validate } from "../validation.ts";

export const segmentationRoutes = new Hono<AppEnv>();

segmentationRoutes.get("/segmentations", validate("query", segmentationListQuery), async (c) => {
  const { image_id, limit, cursor } = c.req.valid("query");
  return c.json(await listSegmentations(c.env.DB, c.get("org").id, image_id, { limit, cursor }));
});

segmentationRoutes.get("/segmentation/:id", validate("param", pathId), async (c) => {
  const { id } = c.req.valid("param");
  const segmentation = await getSegmentation(c.env.DB, c.get("org").id, id);
  if (!segmentation) throw notFound("Segmentation", id);
  return c.json(segmentationView(segmentation));
});
