// Jobs (/jobs, /job/{job_id}, /job/prediction, /job/training): predictions and trainings in the job
// vocabulary, submitted, polled and listed alike. /predict (predictions.ts) is the same prediction
// answered in its own words.
import { createRoute } from "@hono/zod-openapi";
import { jobListQuery, jobPath, predictionBody, trainingBody } from "../../schema/api.ts";
import { jobAcknowledgement, jobPage, jobRecord } from "../../schema/api-records.ts";
import { notFound } from "../errors.ts";
import { apiRouter, errorResponses, jsonResponse } from "../openapi/router.ts";
import { listJobs } from "../services/job-lists.ts";
import { acknowledgementView, jobView } from "../services/job-views.ts";
import { getJob } from "../services/jobs.ts";
import { submitPrediction, submitTraining } from "../services/submissions.ts";

export const jobRoutes = apiRouter();

const jsonBody = <Schema extends typeof predictionBody | typeof trainingBody>(schema: Schema) =>
  ({ required: true, content: { "application/json": { schema } } }) as const;

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

jobRoutes.openapi(listJobsRoute, async (c) => {
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

jobRoutes.openapi(submitPredictionJob, async (c) => {
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

jobRoutes.openapi(submitTrainingJob, async (c) => {
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

jobRoutes.openapi(pollJob, async (c) => {
  const { job_id } = c.req.valid("param");
  const job = await getJob(c.env.DB, c.get("org").id, job_id);
  // Conversions are the upload's business, previews the dashboard's and measurements an import's, not jobs a client submitted.
  if (!job || (job.kind !== "prediction" && job.kind !== "training")) throw notFound("Job", job_id);
  return c.json(jobView(job), 200);
});
