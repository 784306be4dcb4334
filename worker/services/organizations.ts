import { and, eq, isNull } from "drizzle-orm";
import { apiKeys, organizations, type Plan } from "../../schema/db.ts";
import type { Organization } from "../env.ts";
import { database } from "./database.ts";
import { constantTimeEqual, sha256Hex } from "./crypto.ts";

/** What a plan allows when the organization has no cap of its own. */
export const PLAN_LIMITS: Record<Plan, { storageCap: number; analysisCap: number }> = {
  free: { storageCap: 100, analysisCap: 200 },
  pro: { storageCap: 10_000, analysisCap: 10_000 },
  enterprise: { storageCap: 1_000_000, analysisCap: 1_000_000 },
};

/** The organization an API key belongs to, or null for an unknown or revoked key. */
export async function organizationForKey(db: D1Database, key: string): Promise<Organization | null> {
  const keyHash = await sha256Hex(key);
  const [row] = await database(db)
    .select({ org: organizations, keyHash: apiKeys.keyHash })
    .from(apiKeys)
    .innerJoin(organizations, eq(apiKeys.orgId, organizations.id))
    .where(and(eq(apiKeys.keyHash, keyHash), isNull(apiKeys.revokedAt)))
    .limit(1);
  // The lookup is by hash, so timing says nothing about the key; compare once more in constant
  // time anyway so correctness never rests on the index alone.
  if (!row || !(await constantTimeEqual(row.keyHash, keyHash))) return null;
  const limits = PLAN_LIMITS[row.org.plan];
  return {
    id: row.org.id,
    slug: row.org.slug,
    plan: row.org.plan,
    storageCap: row.org.storageCap ?? limits.storageCap,
    analysisCap: row.org.analysisCap ?? limits.analysisCap,
  };
}
