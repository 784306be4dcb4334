import { and, eq, isNull, lt, or } from "drizzle-orm";
import { apiKeys, organizations, type Plan } from "../../schema/db.ts";
import type { Organization } from "../env.ts";
import { database } from "../storage/database.ts";
import { constantTimeEqual, sha256Hex } from "./crypto.ts";

/** What one training job may ask for: steps, time on a runner, images and their pixels in all. */
interface TrainingBounds {
  maxSteps: number;
  maxSeconds: number;
  maxImages: number;
  maxPixels: number;
}

/** What a plan allows when the organization has no cap of its own. */
export const PLAN_LIMITS: Record<Plan, { storageCap: number; analysisCap: number; training: TrainingBounds }> = {
  free: { storageCap: 100, analysisCap: 200, training: { maxSteps: 1_000, maxSeconds: 600, maxImages: 20, maxPixels: 64e6 } },
  pro: { storageCap: 10_000, analysisCap: 10_000, training: { maxSteps: 10_000, maxSeconds: 3_600, maxImages: 200, maxPixels: 1e9 } },
  enterprise: { storageCap: 1_000_000, analysisCap: 1_000_000, training: { maxSteps: 100_000, maxSeconds: 4 * 3_600, maxImages: 500, maxPixels: 8e9 } },
};

/** A key's "last used" is written at most this often, so busy keys do not write on every request. */
const LAST_USED_RESOLUTION_MS = 60_000;

function organizationOf(row: typeof organizations.$inferSelect): Organization {
  const limits = PLAN_LIMITS[row.plan];
  return {
    id: row.id,
    slug: row.slug,
    plan: row.plan,
    storageCap: row.storageCap ?? limits.storageCap,
    analysisCap: row.analysisCap ?? limits.analysisCap,
  };
}

/** The organization an API key belongs to, or null for an unknown or revoked key. */
export async function organizationForKey(db: D1Database, key: string): Promise<Organization | null> {
  const keyHash = await sha256Hex(key);
  const [row] = await database(db)
    .select({ org: organizations, keyId: apiKeys.id, keyHash: apiKeys.keyHash })
    .from(apiKeys)
    .innerJoin(organizations, eq(apiKeys.orgId, organizations.id))
    .where(and(eq(apiKeys.keyHash, keyHash), isNull(apiKeys.revokedAt)))
    .limit(1);
  // The lookup is by hash, so timing says nothing about the key; compare once more in constant
  // time anyway so correctness never rests on the index alone.
  if (!row || !(await constantTimeEqual(row.keyHash, keyHash))) return null;
  const now = Date.now();
  await database(db)
    .update(apiKeys)
    .set({ lastUsedAt: now })
    .where(and(eq(apiKeys.id, row.keyId), or(isNull(apiKeys.lastUsedAt), lt(apiKeys.lastUsedAt, now - LAST_USED_RESOLUTION_MS))));
  return organizationOf(row.org);
}

export async function organizationById(db: D1Database, id: string): Promise<Organization | null> {
  const [row] = await database(db).select().from(organizations).where(eq(organizations.id, id)).limit(1);
  return row ? organizationOf(row) : null;
}
