// The rules a prediction or training request must pass before it becomes a job.
import type { z } from "zod";
import { type predictionBody, requestedDiameter, type trainingBody } from "../../schema/api.ts";
import type { Bindings, Organization } from "../env.ts";
import { HttpError, notFound } from "../errors.ts";
import { getImage, type Image, unusable } from "./images.ts";
import { pixelsOf, submitGpuJob, type SubmitOutcome, TRAINING_OVERHEAD_SECONDS, type TrainingInput } from "./jobs.ts";
import { expansionReachRefusal, MAX_EXPANSION_REACH_PX, type PricedParams, predictionWorkRefusal } from "../../schema/work-limits.ts";
import { timeLimitSeconds } from "./settings.ts";
import { getVisibleModel } from "./models.ts";
import { PLAN_LIMITS } from "./organizations.ts";
import { chooseTrainingLabels } from "./trainings.ts";

function stableJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value ?? null);
  if (Array.isArray(value)) return `[${value.map(stableJson).join(",")}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => a.localeCompare(b));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`).join(",")}}`;
}

async function ownImage(env: Bindings, org: Organization, id: string): Promise<Image> {
  const image = await getImage(env.DB, org.id, id);
  if (!image) throw notFound("Image", id);
  return image;
}

function assertReady(image: Image): void {
  const problem = unusable(image);
  if (problem) throw problem;
}

export async function submitPrediction(env: Bindings, org: Organization, body: z.infer<typeof predictionBody>): Promise<SubmitOutcome> {
  const image = await ownImage(env, org, body.image_id);
  if (!(await getVisibleModel(env.DB, org.id, body.model_id))) throw notFound("Model", body.model_id);
  assertReady(image);
  checkCellExpansion(image, body.params);
  // "Estimate it" has several spellings (0, null, "auto", absent); stored as one, so they dedupe.
  const { diameter, ...rest } = body.params ?? {};
  const size = requestedDiameter(diameter);
  const params = size === undefined ? rest : { ...rest, diameter: size };
  const priced: PricedParams = { diameter: size, augment: params.augment, niter: params.niter, flowThreshold: params.flow_threshold };
  checkWork(image, body.params, priced);
  return submitGpuJob(env, org, {
    kind: "prediction",
    imageId: image.id,
    imageIds: [image.id],
    segmentationIds: [],
    modelId: body.model_id,
    input: { params },
    dedupeKey: `prediction:${image.id}:${body.model_id}:${stableJson(params)}`,
    skipIfIdentical: ["SUBMITTED"],
    exclusive: true,
    timeLimitSeconds: timeLimitSeconds(env, { kind: "prediction", pixels: pixelsOf(image), ...priced }),
  });
}

const PRICED_PARAM_FIELDS: Record<keyof PricedParams, keyof NonNullable<z.infer<typeof predictionBody>["params"]>> = {
  diameter: "diameter",
  augment: "augment",
  niter: "niter",
  flowThreshold: "flow_threshold",
};

/** Parameters that price the prediction past the work a job may do: a 422 naming the one to lower, before anything is queued. */
function checkWork(image: Image, params: z.infer<typeof predictionBody>["params"], priced: PricedParams): void {
  const refusal = predictionWorkRefusal(pixelsOf(image), priced);
  if (!refusal) return;
  const field = PRICED_PARAM_FIELDS[refusal.param];
  throw new HttpError(422, [{ loc: ["body", "params", field], msg: refusal.msg, type: "value_error", input: params?.[field] }]);
}

/**
 * A cell expansion in µm needs a pixel size, and may reach at most MAX_EXPANSION_REACH_PX at it
 * (the request's pixel_size_um, else the file's): a 422 naming the limit, before anything is queued.
 */
function checkCellExpansion(image: Image, params: z.infer<typeof predictionBody>["params"]): void {
  const um = params?.cell_expansion_um;
  if (um === undefined) return;
  const refuse = (msg: string) =>
    new HttpError(422, [{ loc: ["body", "params", "cell_expansion_um"], msg, type: "value_error", input: um, ctx: { max_reach_px: MAX_EXPANSION_REACH_PX } }]);
  const given = params?.pixel_size_um;
  const fromFile = image.pixelSizeXUm !== null && image.pixelSizeYUm !== null ? { x: image.pixelSizeXUm, y: image.pixelSizeYUm } : null;
  const pixelSize = given !== undefined ? { x: given, y: given } : fromFile;
  if (!pixelSize) {
    throw refuse(`A cell expansion in µm needs the pixel size, and image ${image.id}'s file does not give it: add pixel_size_um, or give cell_expansion_px`);
  }
  const refusal = expansionReachRefusal({ um, pixelSize });
  if (refusal) throw refuse(given !== undefined ? refusal : `${refusal} (the pixel size of image ${image.id}'s file; pixel_size_um overrides it)`);
}

/** The plan's bounds on one training: asking past them is refused (402) before anything is queued. */
function checkTrainingBounds(org: Organization, steps: number | undefined, trainingImages: Image[]): void {
  const bounds = PLAN_LIMITS[org.plan].training;
  const refuse = (what: string) => new HttpError(402, `Training limit of the ${org.plan} plan: ${what}; upgrading the plan raises it`);
  if (steps !== undefined && steps > bounds.maxSteps) throw refuse(`at most ${bounds.maxSteps} steps per training, ${steps} asked for`);
  if (trainingImages.length > bounds.maxImages) throw refuse(`at most ${bounds.maxImages} images per training, ${trainingImages.length} given`);
  const pixels = trainingImages.reduce((sum, image) => sum + (image.width ?? 0) * (image.height ?? 0), 0);
  if (pixels > bounds.maxPixels) throw refuse(`at most ${bounds.maxPixels} pixels per training, the images hold ${pixels}`);
}

export async function submitTraining(env: Bindings, org: Organization, body: z.infer<typeof trainingBody>): Promise<SubmitOutcome> {
  const model = await getVisibleModel(env.DB, org.id, body.model_id);
  if (!model) throw notFound("Model", body.model_id);
  const imageIds = [...new Set(body.image_ids)].sort();
  const owned = [];
  for (const id of imageIds) owned.push(await ownImage(env, org, id));
  for (const image of owned) assertReady(image);
  const segmentationIds = await chooseTrainingLabels(env, org.id, imageIds, body.segmentation_ids);
  checkTrainingBounds(org, body.steps, owned);
  const maxSeconds = PLAN_LIMITS[org.plan].training.maxSeconds;
  const input: TrainingInput = {
    image_ids: imageIds,
    segmentation_ids: segmentationIds,
    name: body.name ?? null,
    steps: body.steps ?? null,
    max_seconds: maxSeconds,
    ...(body.seed !== undefined && { seed: body.seed }),
  };
  return submitGpuJob(env, org, {
    kind: "training",
    imageIds,
    segmentationIds,
    modelId: model.id,
    input,
    dedupeKey: `training:${model.id}:${segmentationIds.join(",")}`,
    skipIfIdentical: ["SUBMITTED", "STARTED"],
    // One training at a time per organization: a runner's hours are the scarcest thing it shares.
    exclusive: true,
    timeLimitSeconds: maxSeconds + TRAINING_OVERHEAD_SECONDS,
  });
}
