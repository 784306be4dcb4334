// One-time dashboard sign-in links as operators make them (`npm run admin -- login-link`): 15
// minutes, single use. The URL carries the token; only its SHA-256 is stored.
import { dashboardLoginLinks } from "../../schema/db.ts";
import { LOGIN_LINK_TTL_MS, LOGIN_PATH, newSecretToken } from "../services/sign-in-tokens.ts";
import type { OperatorDatabase } from "./database.ts";
import { requireOrganizationId } from "./organizations.ts";

/** The sign-in URL on `baseUrl` (the worker's origin the person will open). */
export async function createLoginLink(db: OperatorDatabase, slug: string, baseUrl: string): Promise<string> {
  const orgId = await requireOrganizationId(db, slug);
  const url = new URL(LOGIN_PATH, baseUrl);
  const { token, tokenHash } = await newSecretToken();
  const now = Date.now();
  await db.insert(dashboardLoginLinks).values({ tokenHash, orgId, expiresAt: now + LOGIN_LINK_TTL_MS, createdAt: now });
  url.searchParams.set("token", token);
  return url.toString();
}
