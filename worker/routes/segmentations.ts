import { Hono } from "hono";
import { pathId } from "../../schema/api.ts";
import type { AppEnv } from "../env.ts";
import { notFound } from "../errors.ts";
import { deleteSegmentation, importSegmentation } from "../services/segmentation-imports.ts";
import { getSegmentation, segmentationView } from "../services/segmentations.ts";
import { validate } from "../validation.ts";

export const segmentationRoutes = new Hono<AppEnv>();

segmentationRoutes.get("/segmentation/:id", validate("param", pathId), async (c) => {
  const { id } = c.req.valid("param");
  const segmentation = await getSegmentation(c.env.DB, c.get("org").id, id);
  if (!segmentation) throw notFound("Segmentation", id);
  return c.json(segmentationView(segmentation));
});

/** Multipart: field `image_id`, part `file` (label image, ImageJ ROI or archive, or GeoJSON). */
segmentationRoutes.post("/segmentation", async (c) => {
  const segmentation = await importSegmentation(c.env, c.get("org"), c.req.raw);
  return c.json({ segmentation_id: segmentation.id, image_id: segmentation.imageId, source: segmentation.source, cell_count: segmentation.roiCount }, 201);
});

segmentationRoutes.delete("/segmentation/:id", validate("param", pathId), async (c) => {
  const { id } = c.req.valid("param");
  const segmentation = await getSegmentation(c.env.DB, c.get("org").id, id);
  if (!segmentation) throw notFound("Segmentation", id);
  await deleteSegmentation(c.env, segmentation);
  return c.body(null, 204);
});
