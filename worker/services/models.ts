import { and, eq, inArray, isNull, notExists, or } from "drizzle-orm";
import type { ModelRecord, TrainingSummary } from "../../schema/api-records.ts";
import { jobs, models } from "../../schema/db.ts";
import { effectiveMaskDefaults, type MaskDefaults, type ModelMaskDefaults } from "../../schema/mask-defaults.ts";
import { MODALITIES, type Modality } from "../../schema/modality.ts";
import { recommendedFor } from "../../schema/model-recommendations.ts";
import { PUBLIC_MODEL_DESCRIPTIONS } from "../../schema/public-model-descriptions.ts";
import { MODEL_FILES } from "../../schema/storage-keys.ts";
import type { Bindings, Organization } from "../env.ts";
import { HttpError, notFound } from "../errors.ts";
import { database } from "../storage/database.ts";
import { deletePrefix } from "./images.ts";

export type Model = typeof models.$inferSelect;

const visibleTo = (orgId: string) => or(isNull(models.orgId), eq(models.orgId, orgId));

/** Every public model and the organization's own. */
export async function listModels(d1: D1Database, org: Organization): Promise<Model[]> {
  return database(d1).select().from(models).where(visibleTo(org.id)).orderBy(models.createdAt);
}

export async function getVisibleModel(d1: D1Database, orgId: string, id: string): Promise<Model | null> {
  const [model] = await database(d1)
    .select()
    .from(models)
    .where(and(eq(models.id, id), visibleTo(orgId)))
    .limit(1);
  return model ?? null;
}

export function modelView(model: Model): ModelRecord {
  return {
    id: model.id,
    name: model.name,
    version: model.version,
    // A public model's description is its manifest's; an organization's own, the one written when it was trained.
    description: (model.orgId === null ? PUBLIC_MODEL_DESCRIPTIONS[model.id] : undefined) ?? model.description ?? "",
    is_public: model.orgId === null,
    base_model_id: model.baseModelId,
    recommended_for: recommendedFor(model.id, model.orgId === null),
    training: trainingView(model),
    created_at: new Date(model.createdAt).toISOString(),
  };
}

/**
 * The stored summary as the record shows it. Models trained before summaries were fixed stored
 * the runner's raw result: their base, images and steps are shown, the rest as unknown.
 */
function trainingView(model: Model): TrainingSummary | null {
  if (!model.training) return null;
  const stored = model.training as Partial<TrainingSummary> & { job_id: string; image_ids: string[]; steps: number };
  return {
    job_id: stored.job_id,
    base_model_id: stored.base_model_id ?? model.baseModelId!,
    image_ids: stored.image_ids,
    segmentation_ids: stored.segmentation_ids ?? [],
    steps: stored.steps,
    seconds: stored.seconds ?? null,
    metrics: stored.metrics ?? null,
  };
}

const ACTIVE_JOB_STATUSES = ["SUBMITTED", "STARTED"] as const;

/**
 * Removes one of the organization's own models and its files. Public and foreign models are
 * answered as missing; a model a queued or running job uses is refused (checked in the DELETE
 * itself, so a job that starts using it meanwhile is never left without its model).
 */
export async function deleteModel(env: Bindings, orgId: string, id: string): Promise<void> {
  const db = database(env.DB);
  const [model] = await db
    .select()
    .from(models)
    .where(and(eq(models.id, id), eq(models.orgId, orgId)))
    .limit(1);
  if (!model) throw notFound("Model", id);
  const users = db
    .select({ id: jobs.id })
    .from(jobs)
    .where(and(eq(jobs.modelId, id), inArray(jobs.status, ACTIVE_JOB_STATUSES)));
  const deleted = await db
    .delete(models)
    .where(and(eq(models.id, id), eq(models.orgId, orgId), notExists(users)))
    .returning({ id: models.id });
  if (!deleted.length) {
    const [busy] = await users.limit(1);
    throw new HttpError(409, `Model ${id} is used by job ${busy?.id ?? "(finishing)"}; delete it when that job finishes`);
  }
  // The record goes first: a model is never listed without its files.
  await deletePrefix(env.BUCKET, model.r2Prefix);
}

/**
 * The parameters a prediction with `model` takes when left out, per modality: its manifest's
 * `maskDefaults` (in R2 beside its weights) over Cellpose's. A manifest that is missing or
 * unreadable gives Cellpose's, as the engine would use.
 */
export async function maskDefaultsOf(bucket: R2Bucket, model: Model): Promise<Record<Modality, MaskDefaults>> {
  let manifest: { maskDefaults?: ModelMaskDefaults } = {};
  try {
    manifest = ((await (await bucket.get(model.r2Prefix + MODEL_FILES.manifest))?.json()) ?? {}) as typeof manifest;
  } catch {
    // not valid JSON: the runner would refuse the model anyway; the form falls back to Cellpose's
  }
  return Object.fromEntries(MODALITIES.map((m) => [m, effectiveMaskDefaults(manifest.maskDefaults, m)])) as Record<Modality, MaskDefaults>;
}
