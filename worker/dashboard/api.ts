// The dashboard's JSON routes under /dashboard/api, behind the session (and CSRF) middleware.
// The public API's own route modules are mounted here unchanged, so uploads, predictions, exports
// and deletions run the same services with the session's organization instead of a key's; only
// what the API deliberately lacks (key management, listings, usage, previews) is added.
import { type Context, Hono } from "hono";
import { z } from "zod";
import { pathId } from "../../schema/api.ts";
import type { AppEnv } from "../env.ts";
import { HttpError, notFound } from "../errors.ts";
import { exportRoutes } from "../routes/exports.ts";
import { imageRoutes } from "../routes/images.ts";
import { jobRoutes } from "../routes/jobs.ts";
import { modelRoutes } from "../routes/models.ts";
import { predictionRoutes } from "../routes/predictions.ts";
import { segmentationRoutes } from "../routes/segmentations.ts";
import { uploadRoutes } from "../routes/uploads.ts";
import { apiKeyView, createApiKey, listApiKeys, revokeApiKey } from "../services/api-keys.ts";
import { getImage } from "../services/images.ts";
import { predictionView } from "../services/job-views.ts";
import { recentPredictions } from "../services/jobs.ts";
import { getSegmentation, segmentationRecords, segmentationsOfImage } from "../services/segmentations.ts";
import { outlineGrid, outlineTile } from "../services/outline-tiles.ts";
import { cellValues, MAX_PLOTTED_CELLS, plotColumns } from "../services/cell-values.ts";
import { fullResolutionOf, fullResolutionTile, previewIndexOf, previewJobOf, previewState, previewTile, requestPreview } from "../services/previews.ts";
import { usage } from "../services/usage.ts";
import { validate } from "../validation.ts";
import { legacySegmentationPreviewKey } from "../../schema/storage-keys.ts";

const newKeyBody = z.object({ name: z.string().trim().max(100).optional() });
const outlineTilePath = pathId.extend({ column: z.coerce.number().int().min(0), row: z.coerce.number().int().min(0) });
const columnName = z.string().min(1).max(100);
const valuesQuery = z.object({ x: columnName, y: columnName.optional(), max_cells: z.coerce.number().int().min(1).max(MAX_PLOTTED_CELLS).optional() });
const tilePath = pathId.extend({ level: z.coerce.number().int().min(0), column: z.coerce.number().int().min(0), row: z.coerce.number().int().min(0) });
const fullTilePath = pathId.extend({ block: z.coerce.number().int().min(0), column: z.coerce.number().int().min(0), row: z.coerce.number().int().min(0) });

async function segmentationOf(c: Context<AppEnv>, id: string) {
  const segmentation = await getSegmentation(c.env.DB, c.get("org").id, id);
  if (!segmentation) throw notFound("Segmentation", id);
  return segmentation;
}

async function imageOf(c: Context<AppEnv>, id: string) {
  const image = await getImage(c.env.DB, c.get("org").id, id);
  if (!image) throw notFound("Image", id);
  return image;
}

export const dashboardApi = new Hono<AppEnv>()
  .get("/usage", async (c) => c.json(await usage(c.env.DB, c.get("org"))))
  .get("/keys", async (c) => c.json((await listApiKeys(c.env.DB, c.get("org").id)).map(apiKeyView)))
  .post("/keys", validate("json", newKeyBody), async (c) => {
    const { apiKey, key } = await createApiKey(c.env.DB, c.get("org").id, c.req.valid("json").name || null);
    return c.json({ ...apiKeyView(apiKey), key }, 201);
  })
  .post("/keys/:id/revoke", validate("param", pathId), async (c) => c.json(apiKeyView(await revokeApiKey(c.env.DB, c.get("org").id, c.req.valid("param").id))))
  .get("/images/:id/predictions", validate("param", pathId), async (c) => {
    const org = c.get("org");
    const id = c.req.valid("param").id;
    await imageOf(c, id);
    return c.json({
      predictions: (await recentPredictions(c.env.DB, org.id, id)).map(predictionView),
      segmentations: await segmentationRecords(c.env.DB, org.id, await segmentationsOfImage(c.env.DB, org.id, id)),
    });
  })
  // The image's preview: its tile index once made (with, for a slide predicted block-wise, its
  // full-resolution level's tile side and block cores), else where making it stands ("none": never asked).
  .get("/images/:id/preview", validate("param", pathId), async (c) => {
    const image = await imageOf(c, c.req.valid("param").id);
    const [index, full] = await Promise.all([previewIndexOf(c.env, image), fullResolutionOf(c.env, image)]);
    if (index) return c.json({ status: "ready", index, ...(full && { full: { tile: full.tile, blocks: full.blocks } }) });
    const job = await previewJobOf(c.env.DB, image);
    return c.json(job ? previewState(job) : { status: "none" });
  })
  .post("/images/:id/preview", validate("param", pathId), async (c) => {
    const image = await imageOf(c, c.req.valid("param").id);
    if (image.status !== "ready") throw new HttpError(409, `Image ${image.id} is ${image.status}; its preview is made once it is ready`);
    const state = await requestPreview(c.env, image);
    return c.json(state, state.status === "ready" ? 200 : 202);
  })
  .get("/images/:id/preview/:level/:column/:row", validate("param", tilePath), async (c) => {
    const { id, level, column, row } = c.req.valid("param");
    const tile = await previewTile(c.env, await imageOf(c, id), level, column, row);
    if (!tile) throw new HttpError(404, `Image ${id} has no preview tile ${level}/${column}/${row}`);
    // A preview is made once and never changes: the browser keeps its tiles.
    return new Response(tile, { headers: { "Content-Type": "image/png", "Cache-Control": "private, max-age=86400, immutable" } });
  })
  .get("/images/:id/full/:block/:column/:row", validate("param", fullTilePath), async (c) => {
    const { id, block, column, row } = c.req.valid("param");
    const tile = await fullResolutionTile(c.env, await imageOf(c, id), block, column, row);
    if (!tile) throw new HttpError(404, `Image ${id} has no full-resolution tile ${block}/${column}/${row}`);
    // Written once, never changed (a later prediction writes no other): the browser keeps its tiles.
    return new Response(tile, { headers: { "Content-Type": "image/png", "Cache-Control": "private, max-age=86400, immutable" } });
  })
  .get("/segmentation/:id/preview.png", validate("param", pathId), async (c) => {
    const { id } = c.req.valid("param");
    const segmentation = await segmentationOf(c, id);
    const preview = await c.env.BUCKET.get(legacySegmentationPreviewKey(segmentation.orgId, segmentation.id));
    if (!preview) throw new HttpError(404, `Segmentation ${id} has no preview (segmented before previews existed); run the prediction again`);
    return new Response(preview.body, { headers: { "Content-Type": "image/png", "Cache-Control": "private, max-age=3600" } });
  })
  // The viewer's outlines, a tile at a time (services/outline-tiles.ts): the grid, then its tiles.
  .get("/segmentation/:id/outlines", validate("param", pathId), async (c) => c.json(await outlineGrid(c.env, await segmentationOf(c, c.req.valid("param").id))))
  .get("/segmentation/:id/outlines/:column/:row", validate("param", outlineTilePath), async (c) => {
    const { id, column, row } = c.req.valid("param");
    const tile = await outlineTile(c.env, await segmentationOf(c, id), column, row);
    // A segmentation never changes once made: the browser keeps its tiles.
    return new Response(tile, { headers: { "Content-Type": "application/geo+json", "Cache-Control": "private, max-age=86400, immutable" } });
  })
  // The plots' data (services/cell-values.ts): the numeric columns, then one or two columns' values
  // as Float64 cell after cell, every cell or an even sample of MAX_PLOTTED_CELLS.
  .get("/segmentation/:id/columns", validate("param", pathId), async (c) => c.json(await plotColumns(c.env, await segmentationOf(c, c.req.valid("param").id))))
  .get("/segmentation/:id/values", validate("param", pathId), validate("query", valuesQuery), async (c) => {
    const { x, y, max_cells } = c.req.valid("query");
    const values = await cellValues(c.env, await segmentationOf(c, c.req.valid("param").id), y ? [x, y] : [x], max_cells ?? MAX_PLOTTED_CELLS);
    return new Response(values.body, {
      headers: {
        "Content-Type": "application/octet-stream",
        "X-Cell-Count": String(values.cellCount),
        "X-Cells-Returned": String(values.returned),
        "X-Columns": values.columns.join(","),
        // A cell's values never change (a measured import only adds columns): the browser keeps them.
        "Cache-Control": "private, max-age=86400, immutable",
      },
    });
  })
  .route("/", uploadRoutes)
  .route("/", imageRoutes)
  .route("/", modelRoutes)
  .route("/", predictionRoutes)
  .route("/", jobRoutes)
  .route("/", segmentationRoutes)
  .route("/", exportRoutes);
