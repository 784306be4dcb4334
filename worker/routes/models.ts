import { createRoute, z } from "@hono/zod-openapi";
import { modelPath } from "../../schema/api.ts";
import { modelRecord } from "../../schema/api-records.ts";
import { notFound } from "../errors.ts";
import { apiRouter, errorResponses, jsonResponse } from "../openapi/router.ts";
import { deleteModel, getVisibleModel, listModels, modelView } from "../services/models.ts";

export const modelRoutes = apiRouter();

const tags = ["Models"];

const list = createRoute({
  method: "get",
  path: "/models",
  operationId: "listModels",
  tags,
  summary: "Models the organization can use",
  description: "Every shared public base model (such as `cpsam`) and the organization's own trained models.",
  responses: { 200: jsonResponse(z.array(modelRecord), "The models"), ...errorResponses() },
});

modelRoutes.openapi(list, async (c) => c.json((await listModels(c.env.DB, c.get("org"))).map(modelView), 200));

const one = createRoute({
  method: "get",
  path: "/models/{model_id}",
  operationId: "getModel",
  tags,
  summary: "A model",
  request: { params: modelPath },
  responses: { 200: jsonResponse(modelRecord, "The model"), ...errorResponses(404) },
});

modelRoutes.openapi(one, async (c) => {
  const { model_id } = c.req.valid("param");
  const model = await getVisibleModel(c.env.DB, c.get("org").id, model_id);
  if (!model) throw notFound("Model", model_id);
  return c.json(modelView(model), 200);
});

const deleteOne = createRoute({
  method: "delete",
  path: "/models/{model_id}",
  operationId: "deleteModel",
  tags,
  summary: "Delete a custom model",
  description:
    "Removes one of the organization's trained models and its files. Public base models cannot be deleted (404, like a foreign one); " +
    "a model that a queued or running job uses answers 409.",
  request: { params: modelPath },
  responses: { 204: { description: "Deleted" }, ...errorResponses(404, 409) },
});

modelRoutes.openapi(deleteOne, async (c) => {
  const { model_id } = c.req.valid("param");
  await deleteModel(c.env, c.get("org").id, model_id);
  return c.body(null, 204);
});
