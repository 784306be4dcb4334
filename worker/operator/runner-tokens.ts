// Runner tokens scoped to organizations as operators manage them (`npm run admin -- runner-token ...`):
// a lab's own runner sees only its organizations' jobs (services/runner-scopes.ts). A new token is
// shown once; only its SHA-256 and a short prefix are stored.
import { and, eq, isNull } from "drizzle-orm";
import { runnerTokens } from "../../schema/db.ts";
import { notFound } from "../errors.ts";
import { newScopedRunnerToken } from "../services/api-key-format.ts";
import { newId } from "../services/crypto.ts";
import type { OperatorDatabase } from "./database.ts";
import { checkKeyId } from "./inputs.ts";
import { requireOrganizationId } from "./organizations.ts";

/** A token that leases only the jobs of the organizations named by `slugs` (each must exist). */
export async function createRunnerToken(db: OperatorDatabase, slugs: string[]): Promise<{ id: string; token: string }> {
  if (slugs.length === 0) throw new Error("a scoped runner token names at least one organization");
  const orgIds: string[] = [];
  for (const slug of slugs) orgIds.push(await requireOrganizationId(db, slug));
  const { token, tokenHash, prefix } = await newScopedRunnerToken();
  const id = newId();
  await db.insert(runnerTokens).values({ id, tokenHash, prefix, orgIds, createdAt: Date.now() });
  return { id, token };
}

/** Revokes an active scoped runner token: its runner's next request is answered 401. */
export async function revokeRunnerToken(db: OperatorDatabase, id: string): Promise<void> {
  const [revoked] = await db
    .update(runnerTokens)
    .set({ revokedAt: Date.now() })
    .where(and(eq(runnerTokens.id, checkKeyId(id)), isNull(runnerTokens.revokedAt)))
    .returning({ id: runnerTokens.id });
  if (!revoked) throw notFound("Key", id);
}
