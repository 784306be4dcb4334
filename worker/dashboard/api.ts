// The dashboard's JSON routes under /dashboard/api, behind the session (and CSRF) middleware.
// The public API's own route modules are mounted here unchanged, so uploads, predictions, exports
// and deletions run the same services with the session's organization instead of a key's; only
// what the API deliberately lacks (key management, listings, usage, previews) is added.
import { Hono } from "hono";
import { z } from "zod";
import { pathId } from "../../schema/api.ts";
import type { AppEnv } from "../env.ts";
import { HttpError, notFound } from "../errors.ts";
import { exportRoutes } from "../routes/exports.ts";
import { modelRoutes } from "../routes/models.ts";
import { predictions } from "../routes/predictions.ts";
import { segmentationRoutes } from "../routes/segmentations.ts";
import { uploads } from "../routes/uploads.ts";
import { apiKeyView, createApiKey, listApiKeys, revokeApiKey } from "../services/api-keys.ts";
import { getImage } from "../services/images.ts";
import { predictionView } from "../services/job-views.ts";
import { recentPredictions } from "../services/jobs.ts";
import { getSegmentation, previewKey, segmentationsOfImage, segmentationView } from "../services/segmentations.ts";
import { usage } from "../services/usage.ts";
import { validate } from "../validation.ts";

const newKeyBody = z.object({ name: z.string().trim().max(100).optional() });

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
    if (!(await getImage(c.env.DB, org.id, id))) throw notFound("Image", id);
    return c.json({
      predictions: (await recentPredictions(c.env.DB, org.id, id)).map(predictionView),
      segmentations: (await segmentationsOfImage(c.env.DB, org.id, id)).map(segmentationView),
    });
  })
  .get("/segmentation/:id/preview.png", validate("param", pathId), async (c) => {
    const { id } = c.req.valid("param");
    const segmentation = await getSegmentation(c.env.DB, c.get("org").id, id);
    if (!segmentation) throw notFound("Segmentation", id);
    const preview = await c.env.BUCKET.get(previewKey(segmentation));
    if (!preview) throw new HttpError(404, `Segmentation ${id} has no preview (segmented before previews existed); run the prediction again`);
    return new Response(preview.body, { headers: { "Content-Type": "image/png", "Cache-Control": "private, max-age=3600" } });
  })
  .route("/", uploads)
  .route("/", modelRoutes)
  .route("/", predictions)
  .route("/", segmentationRoutes)
  .route("/", exportRoutes);
