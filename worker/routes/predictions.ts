// Predictions and trainings: the same jobs, seen through /predict and through /job.
import { createRoute } from "@hono/zod-openapi";
import { jobListQuery, jobPath, predictionBody, predictionListQuery, predictionPath, trainingBody } from "../../schema/api.ts";
import { MAX_DIAMETER_PX, MAX_EXPANSION_REACH_PX, MIN_DIAMETER_PX, TIME_LIMITS } from "../../schema/work-limits.ts";
import { jobAcknowledgement, jobPage, jobRecord, predictionPage, predictionRecord, predictionSubmission } from "../../schema/api-records.ts";
import { notFound } from "../errors.ts";
import { apiRouter, errorResponses, jsonResponse } from "../openapi/router.ts";
import { listJobs } from "../services/job-lists.ts";
import { acknowledgementView, jobView, predictionView } from "../services/job-views.ts";
import { getJob } from "../services/jobs.ts";
import { submitPrediction, submitTraining } from "../services/submissions.ts";

export const predictions = apiRouter();

const jsonBody = <Schema extends typeof predictionBody | typeof trainingBody>(schema: Schema) =>
  ({ required: true, content: { "application/json": { schema } } }) as const;

const submit = createRoute({
  method: "post",
  path: "/predict",
  operationId: "submitPrediction",
  tags: ["Predictions"],
  summary: "Segment an image",
  description:
    "Queues a prediction of a ready image with a model. One prediction per organization runs at a time: " +
    "an identical queued one answers `skipped` with its id, any other while one is active 400. " +
    `Parameters that multiply the work are bounded (a diameter of ${MIN_DIAMETER_PX} to ${MAX_DIAMETER_PX} px, a cell expansion reaching at most ${MAX_EXPANSION_REACH_PX} px): past them 422 naming the limit. ` +
    `A prediction has a time limit from its image's size (${TIME_LIMITS.baseSeconds} s + ${TIME_LIMITS.predictionSecondsPerMegapixel} s a megapixel, more with \`augment\` or a small diameter, at most ${TIME_LIMITS.maxSeconds / 3600} h), ` +
    "counted from its first start: past it the prediction is FAILED with the reason and never run again.",
  request: { body: jsonBody(predictionBody) },
  responses: {
    202: jsonResponse(predictionSubmission, "Queued: status `SUBMITTED`"),
    200: jsonResponse(predictionSubmission, "An identical prediction is already queued: status `skipped` with its id"),
    ...errorResponses(400, 402, 404, 409, 415),
  },
});

predictions.openapi(submit, async (c) => {
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

predictions.openapi(poll, async (c) => {
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

predictions.openapi(listPredictions, async (c) => {
  const { status, image_id, limit, cursor } = c.req.valid("query");
  return c.json(await listJobs(c.env.DB, c.get("org").id, { kind: "prediction", status, imageId: image_id }, { limit, cursor }, predictionView), 200);
});

const listJobsRoute = createRoute({
  method: "get",
  path: "/jobs",
  operationId: "listJobs",
  tags: ["Jobs"],
  summary: "The organization's predictions and trainings, as jobs",
  description: "Newest first, a page at a time; filter by `kind` and `status`.",
  request: { query: jobListQuery },
  responses: { 200: jsonResponse(jobPage, "A page of jobs"), ...errorResponses() },
});

predictions.openapi(listJobsRoute, async (c) => {
  const { kind, status, limit, cursor } = c.req.valid("query");
  return c.json(await listJobs(c.env.DB, c.get("org").id, { kind, status }, { limit, cursor }, jobView), 200);
});

const acknowledged = {
  202: jsonResponse(jobAcknowledgement, "Queued: status `submitted`"),
  200: jsonResponse(jobAcknowledgement, "An identical job is already queued or running: status `skipped` with its id"),
};

const submitPredictionJob = createRoute({
  method: "post",
  path: "/job/prediction",
  operationId: "submitPredictionJob",
  tags: ["Jobs"],
  summary: "Segment an image (job vocabulary)",
  description: "`POST /predict` answered as a job acknowledgement; poll `GET /job/{job_id}`.",
  request: { body: jsonBody(predictionBody) },
  responses: { ...acknowledged, ...errorResponses(400, 402, 404, 409, 415) },
});

predictions.openapi(submitPredictionJob, async (c) => {
  const { job, skipped } = await submitPrediction(c.env, c.get("org"), c.req.valid("json"));
  return skipped ? c.json(acknowledgementView(job, true), 200) : c.json(acknowledgementView(job, false), 202);
});

const submitTrainingJob = createRoute({
  method: "post",
  path: "/job/training",
  operationId: "submitTrainingJob",
  tags: ["Jobs"],
  summary: "Fine-tune a model",
  description:
    "Trains a new model from `model_id` on the organization's segmented images. Poll `GET /job/{job_id}` until `COMPLETED`; " +
    "the trained model (`result_model_id`) then appears in `GET /models`. One training runs at a time per organization " +
    "(another answers 400); the plan bounds steps, time, images and pixels (402).",
  request: { body: jsonBody(trainingBody) },
  responses: { ...acknowledged, ...errorResponses(400, 402, 404, 409, 415) },
});

predictions.openapi(submitTrainingJob, async (c) => {
  const { job, skipped } = await submitTraining(c.env, c.get("org"), c.req.valid("json"));
  return skipped ? c.json(acknowledgementView(job, true), 200) : c.json(acknowledgementView(job, false), 202);
});

const pollJob = createRoute({
  method: "get",
  path: "/job/{job_id}",
  operationId: "getJob",
  tags: ["Jobs"],
  summary: "A job's status",
  description: "Poll until `status` is `COMPLETED` or `FAILED`.",
  request: { params: jobPath },
  responses: { 200: jsonResponse(jobRecord, "The job"), ...errorResponses(404) },
});

predictions.openapi(pollJob, async (c) => {
  const { job_id } = c.req.valid("param");
  const job = await getJob(c.env.DB, c.get("org").id, job_id);
  // Conversions are the upload's business, previews the dashboard's and measurements an import's, not jobs a client submitted.
  if (!job || (job.kind !== "prediction" && job.kind !== "training")) throw notFound("Job", job_id);
  return c.json(jobView(job), 200);
});
