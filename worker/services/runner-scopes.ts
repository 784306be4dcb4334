// Which organizations a runner's token reaches: the fleet's tokens (RUNNER_TOKENS) every one, a
// scoped token (runner_tokens, made by `npm run admin -- runner-token create`) the organizations it
// names. A scoped runner leases only their jobs and is answered 404 for any other's, as an API key
// is for another organization's resources.
import { and, eq, isNull } from "drizzle-orm";
import { runnerTokens } from "../../schema/db.ts";
import type { Bindings, RunnerScope } from "../env.ts";
import { SCOPED_RUNNER_TOKEN_PREFIX } from "./api-key-format.ts";
import { constantTimeEqual, sha256Hex } from "./crypto.ts";
import { database } from "../storage/database.ts";

async function isFleetToken(env: Bindings, token: string): Promise<boolean> {
  let match = false;
  // Check every configured token (no early exit) so timing does not tell which one matched.
  for (const candidate of (env.RUNNER_TOKENS ?? "")
    .split(",")
    .map((t) => t.trim())
    .filter(Boolean)) {
    if (await constantTimeEqual(candidate, token)) match = true;
  }
  return match;
}

/** The scope of a runner token, or null when it is none (unknown, or revoked). */
export async function runnerScopeOf(env: Bindings, token: string): Promise<RunnerScope | null> {
  const tokenHash = await sha256Hex(token);
  if (await isFleetToken(env, token)) return { tokenHash, orgIds: null };
  if (!token.startsWith(SCOPED_RUNNER_TOKEN_PREFIX)) return null;
  // Looked up by its hash: the token itself is never stored, and equality on a hash leaks nothing of it.
  const [row] = await database(env.DB)
    .select({ orgIds: runnerTokens.orgIds })
    .from(runnerTokens)
    .where(and(eq(runnerTokens.tokenHash, tokenHash), isNull(runnerTokens.revokedAt)))
    .limit(1);
  return row ? { tokenHash, orgIds: row.orgIds } : null;
}

/** Whether a runner of this scope may see an organization's job. */
export function reaches(scope: RunnerScope, orgId: string): boolean {
  return scope.orgIds === null || scope.orgIds.includes(orgId);
}
