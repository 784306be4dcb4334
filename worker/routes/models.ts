import { Hono } from "hono";
import type { AppEnv } from "../env.ts";
import { listModels, modelView } from "../services/models.ts";

export const modelRoutes = new Hono<AppEnv>();

modelRoutes.get("/models", async (c) => c.json((await listModels(c.env.DB, c.get("org"))).map(modelView)));
