// One-time sign-in links (`npm run admin -- login-link`). Opening a link only looks at it: link
// previews and mail scanners fetch URLs they see, and a GET that spent the link would sign them in
// instead of the person. The link is spent by the POST its landing page makes.
import { and, eq, gt, isNull } from "drizzle-orm";
import { dashboardLoginLinks, organizations } from "../../schema/db.ts";
import { sha256Hex } from "./crypto.ts";
import { database } from "../storage/database.ts";

const usable = async (token: string, now: number) =>
  and(eq(dashboardLoginLinks.tokenHash, await sha256Hex(token)), isNull(dashboardLoginLinks.usedAt), gt(dashboardLoginLinks.expiresAt, now));

/** The organization a link would sign in to, while it is unused and unexpired; it stays unused. */
export async function peekLoginLink(d1: D1Database, token: string): Promise<{ orgId: string; slug: string } | null> {
  const [link] = await database(d1)
    .select({ orgId: organizations.id, slug: organizations.slug })
    .from(dashboardLoginLinks)
    .innerJoin(organizations, eq(organizations.id, dashboardLoginLinks.orgId))
    .where(await usable(token, Date.now()))
    .limit(1);
  return link ?? null;
}

/** Spends a login link: returns its organization once, then never again (or null if expired). */
export async function consumeLoginLink(d1: D1Database, token: string): Promise<string | null> {
  const [link] = await database(d1)
    .update(dashboardLoginLinks)
    .set({ usedAt: Date.now() })
    .where(await usable(token, Date.now()))
    .returning();
  return link?.orgId ?? null;
}
