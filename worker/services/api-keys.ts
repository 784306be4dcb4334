// API keys as the dashboard manages them. A key is shown once when created; only its hash is kept.
import { and, desc, eq, isNull } from "drizzle-orm";
import { apiKeys } from "../../schema/db.ts";
import { notFound } from "../errors.ts";
import { newApiKey } from "./api-key-format.ts";
import { newId } from "./crypto.ts";
import { database } from "../storage/database.ts";

export type ApiKey = typeof apiKeys.$inferSelect;

export async function listApiKeys(d1: D1Database, orgId: string): Promise<ApiKey[]> {
  return database(d1).select().from(apiKeys).where(eq(apiKeys.orgId, orgId)).orderBy(desc(apiKeys.createdAt));
}

export async function createApiKey(d1: D1Database, orgId: string, name: string | null): Promise<{ apiKey: ApiKey; key: string }> {
  const { key, keyHash, prefix } = await newApiKey();
  const [apiKey] = await database(d1).insert(apiKeys).values({ id: newId(), orgId, keyHash, prefix, name, createdAt: Date.now() }).returning();
  // An INSERT without ON CONFLICT returns the row it inserted, or throws.
  return { apiKey: apiKey!, key };
}

/** Revokes at once: the next request with the key is refused (organizationForKey skips revoked keys). */
export async function revokeApiKey(d1: D1Database, orgId: string, id: string): Promise<ApiKey> {
  const [revoked] = await database(d1)
    .update(apiKeys)
    .set({ revokedAt: Date.now() })
    .where(and(eq(apiKeys.id, id), eq(apiKeys.orgId, orgId), isNull(apiKeys.revokedAt)))
    .returning();
  if (!revoked) throw notFound("Key", id);
  return revoked;
}

export function apiKeyView(k: ApiKey) {
  const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
  return { id: k.id, name: k.name, prefix: k.prefix, created_at: iso(k.createdAt), last_used_at: iso(k.lastUsedAt), revoked_at: iso(k.revokedAt) };
}
