import { Hono } from "hono";
import type { AppEnv } from "../env.ts";
import { pathId } from "../../schema/api.ts";
import { notFound } from "../errors.ts";
import { getVisibleModel, listModels, modelView } from "../services/models.ts";
import { validate } from "../validation.ts";

export const modelRoutes = new Hono<AppEnv>();

modelRoutes.get("/models", async (c) => c.json((await listModels(c.env.DB, c.get("org"))).map(modelView)));

modelRoutes.get("/models/:id", validate("param", pathId), async (c) => {
  const { id } = c.req.valid("param");
  const model = await getVisibleModel(c.env.DB, c.get("org").id, id);
  if (!model) throw notFound("Model", id);
  return c.json(modelView(model));
});
