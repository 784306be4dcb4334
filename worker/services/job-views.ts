// How jobs look from outside: the same row seen as a prediction (/predict) or as a job (/job).
// Which runner holds a job (its lease holder) is the operator's business, never in these views:
// runner names are host names and process ids of the service's machines.
import type { JobAcknowledgement, JobRecord, PredictionRecord } from "../../schema/api-records.ts";
import type { Job } from "./jobs.ts";
import { trainingMetricsOf } from "./trainings.ts";

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

function outcome(job: Job) {
  const done = job.status === "COMPLETED";
  const result = (job.result ?? {}) as { roi_count?: number };
  return {
    segmentation_id: done && job.kind === "prediction" ? job.segmentationId : null,
    cell_count: done && job.kind === "prediction" ? (result.roi_count ?? null) : null,
    result_model_id: done && job.kind === "training" ? job.resultModelId : null,
    metrics: trainingMetricsOf(job),
  };
}

function running(job: Job) {
  return {
    progress: job.status === "COMPLETED" ? 1 : (job.progress ?? 0),
    stage: job.stage ?? (job.status === "SUBMITTED" ? "queued" : null),
    blocks: job.blocksTotal === null ? null : { total: job.blocksTotal, done: job.blocksDone ?? 0, glass: job.blocksGlass ?? 0 },
  };
}

function times(job: Job) {
  return { attempts: job.attempts, created_at: iso(job.createdAt)!, started_at: iso(job.startedAt), finished_at: iso(job.finishedAt) };
}

export function predictionView(job: Job): PredictionRecord {
  const { segmentation_id, cell_count } = outcome(job);
  return {
    prediction_id: job.id,
    status: job.status,
    image_id: job.imageId!,
    model_id: job.modelId!,
    params: (job.input as { params?: Record<string, unknown> } | null)?.params ?? {},
    ...running(job),
    segmentation_id,
    cell_count,
    reason: job.reason,
    ...times(job),
  };
}

export function jobView(job: Job): JobRecord {
  const input = (job.input ?? {}) as { image_ids?: string[] };
  return {
    job_id: job.id,
    kind: job.kind as JobRecord["kind"],
    status: job.status,
    reason: job.reason,
    /** The id a client polls; the same as job_id (kept for clients of the spec's task vocabulary). */
    task_id: job.id,
    /** Runners lease the job by its own id, so that is its id on the GPU side too. */
    worker_job_id: job.id,
    image_id: job.imageId,
    image_ids: input.image_ids ?? (job.imageId ? [job.imageId] : []),
    model_id: job.modelId,
    ...running(job),
    ...outcome(job),
    ...times(job),
  };
}

/** The answer to a submission: the job, or the identical one that made it unnecessary. */
export function acknowledgementView(job: Job, skipped: boolean): JobAcknowledgement {
  return {
    job_id: job.id,
    status: skipped ? "skipped" : "submitted",
    reason: skipped
      ? `An identical ${job.kind} is already ${job.status === "STARTED" ? "running" : "queued"} (job ${job.id})`
      : `The ${job.kind} is queued; poll GET /job/${job.id} until its status is COMPLETED`,
    task_id: job.id,
    worker_job_id: job.id,
  };
}
