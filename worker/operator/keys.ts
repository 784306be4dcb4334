// Organizations' API keys as operators manage them (`npm run admin -- key ...`). A new key is shown
// once; only its SHA-256 and a short prefix are stored.
import { and, asc, eq, isNull } from "drizzle-orm";
import { apiKeys, organizations } from "../../schema/db.ts";
import { notFound } from "../errors.ts";
import { newApiKey } from "../services/api-key-format.ts";
import { newId } from "../services/crypto.ts";
import type { OperatorDatabase } from "./database.ts";
import { checkKeyId, checkSlug } from "./inputs.ts";
import { requireOrganizationId } from "./organizations.ts";

/** A key as `key list` shows it (and the operator API answers it): never the key or its hash. */
export interface KeyListing {
  id: string;
  prefix: string;
  created_at: number;
  revoked_at: number | null;
}

export async function createKey(db: OperatorDatabase, slug: string): Promise<{ id: string; key: string }> {
  const orgId = await requireOrganizationId(db, slug);
  const { key, keyHash, prefix } = await newApiKey();
  const id = newId();
  await db.insert(apiKeys).values({ id, orgId, keyHash, prefix, createdAt: Date.now() });
  return { id, key };
}

/** The organization's keys, oldest first; none for a slug no organization has. */
export async function listKeys(db: OperatorDatabase, slug: string): Promise<KeyListing[]> {
  return db
    .select({ id: apiKeys.id, prefix: apiKeys.prefix, created_at: apiKeys.createdAt, revoked_at: apiKeys.revokedAt })
    .from(apiKeys)
    .innerJoin(organizations, eq(organizations.id, apiKeys.orgId))
    .where(eq(organizations.slug, checkSlug(slug)))
    .orderBy(asc(apiKeys.createdAt));
}

/** Revokes an active key; a missing or already revoked one is a 404. */
export async function revokeKey(db: OperatorDatabase, keyId: string): Promise<void> {
  const [revoked] = await db
    .update(apiKeys)
    .set({ revokedAt: Date.now() })
    .where(and(eq(apiKeys.id, checkKeyId(keyId)), isNull(apiKeys.revokedAt)))
    .returning({ id: apiKeys.id });
  if (!revoked) throw notFound("Key", keyId);
}
