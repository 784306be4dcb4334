import { Hono } from "hono";
import { jobListQuery, pathId, predictionBody, predictionListQuery, trainingBody } from "../../schema/api.ts";
import type { PredictionSubmission } from "../../schema/api-records.ts";
import type { AppEnv } from "../env.ts";
import { notFound } from "../errors.ts";
import { jobView, predictionView, acknowledgementView } from "../services/job-views.ts";
import { listJobs } from "../services/job-lists.ts";
import { getJob } from "../services/jobs.ts";
import { submitPrediction, submitTraining } from "../services/submissions.ts";
import { validate } from "../validation.ts";

/** Predictions and trainings: the same jobs, seen through /predict and through /job. */
export const predictions = new Hono<AppEnv>();

predictions.post("/predict", validate("json", predictionBody), async (c) => {
  const { job, skipped } = await submitPrediction(c.env, c.get("org"), c.req.valid("json"));
  const answer: PredictionSubmission = { prediction_id: job.id, status: skipped ? "skipped" : "SUBMITTED" };
  return c.json(answer, skipped ? 200 : 202);
});

predictions.get("/predict/:id", validate("param", pathId), async (c) => {
  const { id } = c.req.valid("param");
  const job = await getJob(c.env.DB, c.get("org").id, id);
  if (!job || job.kind !== "prediction") throw notFound("Prediction", id);
  return c.json(predictionView(job));
});

predictions.get("/predictions", validate("query", predictionListQuery), async (c) => {
  const { status, image_id, limit, cursor } = c.req.valid("query");
  return c.json(await listJobs(c.env.DB, c.get("org").id, { kind: "prediction", status, imageId: image_id }, { limit, cursor }, predictionView));
});

predictions.get("/jobs", validate("query", jobListQuery), async (c) => {
  const { kind, status, limit, cursor } = c.req.valid("query");
  return c.json(await listJobs(c.env.DB, c.get("org").id, { kind, status }, { limit, cursor }, jobView));
});

predictions.post("/job/prediction", validate("json", predictionBody), async (c) => {
  const { job, skipped } = await submitPrediction(c.env, c.get("org"), c.req.valid("json"));
  return c.json(acknowledgementView(job, skipped), skipped ? 200 : 202);
});

predictions.post("/job/training", validate("json", trainingBody), async (c) => {
  const { job, skipped } = await submitTraining(c.env, c.get("org"), c.req.valid("json"));
  return c.json(acknowledgementView(job, skipped), skipped ? 200 : 202);
});

predictions.get("/job/:id", validate("param", pathId), async (c) => {
  const { id } = c.req.valid("param");
  const job = await getJob(c.env.DB, c.get("org").id, id);
  // Conversions are the upload's business, not a job a client submitted.
  if (!job || job.kind === "conversion") throw notFound("Job", id);
  return c.json(jobView(job));
});
