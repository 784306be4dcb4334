import { Hono } from "hono";
import type { AppEnv } from "./env.ts";
import { onError, onNotFound } from "./errors.ts";
import { requireOperator, requireOrganization, requireRunner } from "./middleware/auth.ts";
import { referenceSecurityHeaders } from "./middleware/security-headers.ts";
import { describeApi } from "./openapi/document.ts";
import { apiRouter } from "./openapi/router.ts";
import { exportRoutes } from "./routes/exports.ts";
import { imageRoutes } from "./routes/images.ts";
import { internal } from "./routes/internal.ts";
import { jobRoutes } from "./routes/jobs.ts";
import { modelRoutes } from "./routes/models.ts";
import { operator } from "./routes/operator.ts";
import { predictionRoutes } from "./routes/predictions.ts";
import { segmentationRoutes } from "./routes/segmentations.ts";
import { storage } from "./routes/storage.ts";
import { uploadRoutes } from "./routes/uploads.ts";
// After the API's routes: the dashboard mounts them, and they must be evaluated with @hono/zod-openapi's zod.
import { dashboard } from "./dashboard/index.tsx";

/** Everything the OpenAPI document describes, and nothing else. */
const publicApi = apiRouter();
publicApi.use(requireOrganization);
for (const routes of [uploadRoutes, imageRoutes, modelRoutes, predictionRoutes, jobRoutes, segmentationRoutes, exportRoutes]) publicApi.route("/", routes);

// Exported for its tests only (test/api/openapi-document.test.ts, test/worker/openapi-responses.ts).
export const apiDescription = describeApi(publicApi);

// Routes are tried in the order they are added: the document, the reference page and signed
// storage URLs answer before the public API's key check, the internal API has its own.
const v1 = new Hono<AppEnv>()
  .get("/openapi.json", (c) => c.json(apiDescription.document()))
  .get("/docs", referenceSecurityHeaders, apiDescription.page)
  .route("/storage", storage)
  .use("/internal/*", requireRunner)
  .route("/internal", internal)
  .use("/operator/*", requireOperator)
  .route("/operator", operator)
  .route("/", publicApi);

/** Where a person or a client starts: the dashboard and the API's reference, linked from the service's root. */
const START = { dashboard: "/dashboard", api: "/api/v1", api_docs: "/api/v1/docs", openapi: "/api/v1/openapi.json" } as const;

export const app = new Hono<AppEnv>()
  .get("/", (c) =>
    c.req.header("Accept")?.includes("text/html")
      ? c.html(
          `<!doctype html><meta charset="utf-8"><title>Cell segmentation service</title>` +
            `<h1>Cell segmentation service</h1><p><a href="${START.dashboard}">Dashboard</a> · <a href="${START.api_docs}">API reference</a> · <a href="${START.openapi}">OpenAPI document</a></p>`,
        )
      : c.json({ service: "cell segmentation", ...START }),
  )
  .get("/docs", (c) => c.redirect("/api/v1/docs"))
  .route("/dashboard", dashboard)
  .route("/api/v1", v1);

app.onError(onError);
app.notFound(onNotFound);
