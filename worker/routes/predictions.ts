// Predictions (/predict, /predictions): submit a segmentation of an image, poll it, list them. The
// same jobs, with trainings, are seen through /job and /jobs in jobs.ts.
import { createRoute } from "@hono/zod-openapi";
import { predictionBody, predictionListQuery, predictionPath } from "../../schema/api.ts";
import { MAX_DIAMETER_PX, MAX_EXPANSION_REACH_PX, MAX_NITER, MIN_DIAMETER_PX, TIME_LIMITS } from "../../schema/work-limits.ts";
import { predictionPage, predictionRecord, predictionSubmission } from "../../schema/api-records.ts";
import { notFound } from "../errors.ts";
import { apiRouter, errorResponses, jsonResponse } from "../openapi/router.ts";
import { listJobs } from "../services/job-lists.ts";
import { predictionView } from "../services/job-views.ts";
import { getJob } from "../services/jobs.ts";
import { submitPrediction } from "../services/submissions.ts";

export const predictionRoutes = apiRouter();

const submit = createRoute({
  method: "post",
  path: "/predict",
  operationId: "submitPrediction",
  tags: ["Predictions"],
  summary: "Segment an image",
  description:
    "Queues a prediction of a ready image with a model. One prediction per organization runs at a time: " +
    "an identical queued one answers `skipped` with its id, any other while one is active 400. " +
    `Parameters that multiply the work are bounded (a diameter of ${MIN_DIAMETER_PX} to ${MAX_DIAMETER_PX} px, niter up to ${MAX_NITER}, a cell expansion reaching at most ${MAX_EXPANSION_REACH_PX} px) ` +
    `and priced together (pixels x network passes x flow steps): past a bound, or past ${TIME_LIMITS.maxSeconds / 3600} h of priced work, 422 naming the parameter; a field the body does not have, 422 too. ` +
    `A prediction has a time limit from the same price (${TIME_LIMITS.baseSeconds} s + ${TIME_LIMITS.predictionSecondsPerMegapixel} s a megapixel, more with \`augment\`, a small diameter or more flow steps, at most ${TIME_LIMITS.maxSeconds / 3600} h), ` +
    "counted from its first start: past it the prediction is FAILED with the reason and never run again.",
  request: { body: { required: true, content: { "application/json": { schema: predictionBody } } } },
  responses: {
    202: jsonResponse(predictionSubmission, "Queued: status `SUBMITTED`"),
    200: jsonResponse(predictionSubmission, "An identical prediction is already queued: status `skipped` with its id"),
    ...errorResponses(400, 402, 404, 409, 415),
  },
});

predictionRoutes.openapi(submit, async (c) => {
  const { job, skipped } = await submitPrediction(c.env, c.get("org"), c.req.valid("json"));
  if (skipped) return c.json({ prediction_id: job.id, status: "skipped" as const }, 200);
  return c.json({ prediction_id: job.id, status: "SUBMITTED" as const }, 202);
});

const poll = createRoute({
  method: "get",
  path: "/predict/{prediction_id}",
  operationId: "getPrediction",
  tags: ["Predictions"],
  summary: "A prediction's status",
  description: "Poll until `status` is `COMPLETED` (then `segmentation_id` and `cell_count` are set) or `FAILED` (`reason` says why).",
  request: { params: predictionPath },
  responses: { 200: jsonResponse(predictionRecord, "The prediction"), ...errorResponses(404) },
});

predictionRoutes.openapi(poll, async (c) => {
  const { prediction_id } = c.req.valid("param");
  const job = await getJob(c.env.DB, c.get("org").id, prediction_id);
  if (job?.kind !== "prediction") throw notFound("Prediction", prediction_id);
  return c.json(predictionView(job), 200);
});

const listPredictions = createRoute({
  method: "get",
  path: "/predictions",
  operationId: "listPredictions",
  tags: ["Predictions"],
  summary: "The organization's predictions",
  description: "Newest first, a page at a time; filter by `status` and `image_id`.",
  request: { query: predictionListQuery },
  responses: { 200: jsonResponse(predictionPage, "A page of predictions"), ...errorResponses() },
});

predictionRoutes.openapi(listPredictions, async (c) => {
  const { status, image_id, limit, cursor } = c.req.valid("query");
  return c.json(await listJobs(c.env.DB, c.get("org").id, { kind: "prediction", status, imageId: image_id }, { limit, cursor }, predictionView), 200);
});
