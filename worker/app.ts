import { Hono } from "hono";
import type { AppEnv } from "./env.ts";
import { dashboard } from "./dashboard/index.tsx";
import { onError, onNotFound } from "./errors.ts";
import { requireOrganization, requireRunner } from "./middleware/auth.ts";
import { exportRoutes } from "./routes/exports.ts";
import { internal } from "./routes/internal.ts";
import { modelRoutes } from "./routes/models.ts";
import { predictions } from "./routes/predictions.ts";
import { segmentationRoutes } from "./routes/segmentations.ts";
import { storage } from "./routes/storage.ts";
import { uploads } from "./routes/uploads.ts";

const publicApi = new Hono<AppEnv>()
  .use(requireOrganization)
  .route("/", uploads)
  .route("/", modelRoutes)
  .route("/", predictions)
  .route("/", segmentationRoutes)
  .route("/", exportRoutes);

export const app = new Hono<AppEnv>()
  .route("/dashboard", dashboard)
  .basePath("/api/v1")
  .route("/storage", storage)
  .use("/internal/*", requireRunner)
  .route("/internal", internal)
  .route("/", publicApi);

app.onError(onError);
app.notFound(onNotFound);
