// What a training job learns from (one segmentation per image, fixed when the job is submitted)
// and the summary of what it did that its trained model carries.
import type { TrainingMetrics, TrainingSummary } from "../../schema/api-records.ts";
import type { TrainingResult } from "../../schema/internal-api.ts";
import type { Bindings } from "../env.ts";
import { HttpError, notFound } from "../errors.ts";
import { type Job, JobFaultError, type TrainingInput } from "./jobs.ts";
import { getSegmentation, latestSegmentation, type Segmentation } from "./segmentations.ts";
import type { Modality } from "../../schema/modality.ts";

/** A training job's `input`. segmentation_ids is absent on jobs submitted before labels were fixed at submission. */
export const trainingInput = (job: Job) => job.input as TrainingInput;

/**
 * The segmentation each image is learned from, in `imageIds`' order: the one named in
 * `segmentationIds` for its image, else the image's most recent one (a correction imported
 * after a prediction wins; a prediction made after that import wins again).
 */
export async function chooseTrainingLabels(env: Bindings, orgId: string, imageIds: string[], segmentationIds: string[] = []): Promise<string[]> {
  const named = new Map<string, string>();
  const misplaced = [];
  for (const [i, id] of segmentationIds.entries()) {
    const segmentation = await getSegmentation(env.DB, orgId, id);
    if (!segmentation) throw notFound("Segmentation", id);
    const loc = ["body", "segmentation_ids", i];
    if (!imageIds.includes(segmentation.imageId)) {
      misplaced.push({ loc, msg: `Segmentation ${id} is of image ${segmentation.imageId}, which is not in image_ids`, type: "value_error" });
    } else if (named.has(segmentation.imageId) && named.get(segmentation.imageId) !== id) {
      misplaced.push({ loc, msg: `Segmentation ${id} is a second one for image ${segmentation.imageId}: name at most one per image`, type: "value_error" });
    } else {
      named.set(segmentation.imageId, id);
    }
  }
  if (misplaced.length) throw new HttpError(422, misplaced);
  const chosen = [];
  for (const imageId of imageIds) {
    const id = named.get(imageId) ?? (await latestSegmentation(env.DB, orgId, imageId))?.id;
    if (!id) throw new HttpError(409, `Image ${imageId} has no segmentation to learn from: predict or import one first`);
    chosen.push(id);
  }
  return chosen;
}

/** The lease payload's labels: those fixed at submission (one may have been deleted since). */
export async function trainingLabels(env: Bindings, job: Job): Promise<{ imageId: string; labels: Segmentation }[]> {
  const input = trainingInput(job);
  const ids = input.segmentation_ids ?? (await chooseTrainingLabels(env, job.orgId, input.image_ids));
  const chosen = [];
  for (const [i, imageId] of input.image_ids.entries()) {
    const id = ids[i];
    if (id === undefined) throw new JobFaultError("input", `The training names no segmentation for image ${imageId}`);
    const labels = await getSegmentation(env.DB, job.orgId, id);
    if (!labels) throw new JobFaultError("input", `Segmentation ${id} of image ${imageId}, which this training learns from, was deleted`);
    chosen.push({ imageId, labels });
  }
  return chosen;
}

/** A COMPLETED training's scores; null for results of runners that did not report them. */
export function trainingMetricsOf(job: Job): TrainingMetrics | null {
  if (job.kind !== "training" || job.status !== "COMPLETED") return null;
  return (job.result as TrainingResult | null)?.metrics ?? null;
}

export function trainingSummary(job: Job, result: TrainingResult): TrainingSummary {
  const input = trainingInput(job);
  return {
    job_id: job.id,
    base_model_id: job.modelId!,
    image_ids: input.image_ids,
    segmentation_ids: input.segmentation_ids ?? [],
    steps: result.steps,
    seconds: result.seconds ?? null,
    metrics: result.metrics ?? null,
  };
}

/** A ready image with what a training would learn from it (its most recent segmentation), for the dashboard's form. */
export interface TrainableImage {
  id: string;
  name: string;
  width: number | null;
  height: number | null;
  segmentationSource: string;
  cellCount: number;
  /** The modality the service read when it last segmented the image (imports record none). */
  modality: Modality | null;
}

/** The organization's ready images that have a segmentation to learn from, newest first. */
export async function trainableImages(d1: D1Database, orgId: string, limit = 200): Promise<TrainableImage[]> {
  const { results } = await d1
    .prepare(
      `SELECT i.id, i.name, i.width, i.height, s.source AS segmentationSource, s.roi_count AS cellCount,
         (SELECT modality FROM segmentations WHERE org_id = i.org_id AND image_id = i.id AND modality IS NOT NULL
          ORDER BY created_at DESC, id DESC LIMIT 1) AS modality
       FROM images i JOIN segmentations s ON s.id = (
         SELECT id FROM segmentations WHERE org_id = i.org_id AND image_id = i.id ORDER BY created_at DESC, id DESC LIMIT 1)
       WHERE i.org_id = ?1 AND i.status = 'ready'
       ORDER BY i.created_at DESC LIMIT ?2`,
    )
    .bind(orgId, limit)
    .all<TrainableImage>();
  return results;
}
