import { and, eq, isNull, or } from "drizzle-orm";
import type { ModelRecord } from "../../schema/api-records.ts";
import { models } from "../../schema/db.ts";
import type { Organization } from "../env.ts";
import { database } from "./database.ts";

export type Model = typeof models.$inferSelect;

/** Where a training's model files go: its result model's first (and only) version. */
export function trainedModelPrefix(modelId: string): string {
  return `models/${modelId}/1/`;
}

const visibleTo = (orgId: string) => or(isNull(models.orgId), eq(models.orgId, orgId));

/** Every public model and the organization's own. */
export async function listModels(d1: D1Database, org: Organization): Promise<Model[]> {
  return database(d1).select().from(models).where(visibleTo(org.id)).orderBy(models.createdAt);
}

export async function getVisibleModel(d1: D1Database, orgId: string, id: string): Promise<Model | null> {
  const [model] = await database(d1).select().from(models).where(and(eq(models.id, id), visibleTo(orgId))).limit(1);
  return model ?? null;
}

export function modelView(model: Model): ModelRecord {
  return {
    id: model.id,
    name: model.name,
    version: model.version,
    description: model.description ?? "",
    is_public: model.orgId === null,
    base_model_id: model.baseModelId,
    training: (model.training ?? null) as ModelRecord["training"],
    created_at: new Date(model.createdAt).toISOString(),
  };
}
