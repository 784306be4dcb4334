// Dashboard sign-ins. A session belongs to one organization, like an API key; the cookie carries
// a random token and D1 keeps only its hash. Sessions opened through Cloudflare Access name the
// member's email and end when the membership does; a member of several organizations moves their
// session between them (the switcher in the top bar).
import { and, asc, desc, eq, gt, isNotNull, isNull, lte, or } from "drizzle-orm";
import { dashboardLoginLinks, dashboardSessions, organizationMembers, organizations } from "../../schema/db.ts";
import type { Organization } from "../env.ts";
import { hmacSha256Hex, newId, sha256Hex } from "./crypto.ts";
import { database } from "../storage/database.ts";
import { forgetOldSignOuts } from "./dashboard-sign-outs.ts";
import { organizationById } from "./organizations.ts";
import { newSecretToken, SESSION_TTL_MS } from "./sign-in-tokens.ts";

export type DashboardSession = typeof dashboardSessions.$inferSelect;

export async function openSession(d1: D1Database, orgId: string, email: string | null): Promise<{ token: string; session: DashboardSession }> {
  const { token, tokenHash } = await newSecretToken();
  const now = Date.now();
  const [session] = await database(d1)
    .insert(dashboardSessions)
    .values({ id: newId(), tokenHash, orgId, email, createdAt: now, expiresAt: now + SESSION_TTL_MS })
    .returning();
  // An INSERT without ON CONFLICT returns the row it inserted, or throws.
  return { token, session: session! };
}

/** The live session a cookie token names, with its organization; null if unknown, expired or no longer a member. */
export async function sessionForToken(d1: D1Database, token: string): Promise<{ session: DashboardSession; org: Organization } | null> {
  const db = database(d1);
  const [session] = await db
    .select()
    .from(dashboardSessions)
    .where(and(eq(dashboardSessions.tokenHash, await sha256Hex(token)), gt(dashboardSessions.expiresAt, Date.now())))
    .limit(1);
  if (!session) return null;
  if (session.email !== null && !(await isMember(d1, session.orgId, session.email))) return null;
  const org = await organizationById(d1, session.orgId);
  return org ? { session, org } : null;
}

export async function closeSession(d1: D1Database, sessionId: string): Promise<void> {
  await database(d1).delete(dashboardSessions).where(eq(dashboardSessions.id, sessionId));
}

/** The organization's live sessions opened with sign-in links (they name no email), newest first. */
export async function linkSessionsOf(d1: D1Database, orgId: string, now = Date.now()): Promise<DashboardSession[]> {
  return database(d1)
    .select()
    .from(dashboardSessions)
    .where(and(eq(dashboardSessions.orgId, orgId), isNull(dashboardSessions.email), gt(dashboardSessions.expiresAt, now)))
    .orderBy(desc(dashboardSessions.createdAt), desc(dashboardSessions.id));
}

/**
 * Ends one of the organization's sign-in-link sessions, whoever holds it (a member revoking a
 * session they do not recognise, or a link that leaked). False when the organization has no such
 * session: another organization's is answered like a missing one.
 */
export async function revokeLinkSession(d1: D1Database, orgId: string, id: string): Promise<boolean> {
  const [revoked] = await database(d1)
    .delete(dashboardSessions)
    .where(and(eq(dashboardSessions.id, id), eq(dashboardSessions.orgId, orgId), isNull(dashboardSessions.email)))
    .returning({ id: dashboardSessions.id });
  return Boolean(revoked);
}

export function linkSessionView(session: DashboardSession, currentSessionId: string) {
  return {
    id: session.id,
    created_at: new Date(session.createdAt).toISOString(),
    expires_at: new Date(session.expiresAt).toISOString(),
    /** The session making the request (revoking it signs this browser out). */
    current: session.id === currentSessionId,
  };
}

async function isMember(d1: D1Database, orgId: string, email: string): Promise<boolean> {
  const [row] = await database(d1)
    .select({ id: organizationMembers.id })
    .from(organizationMembers)
    .where(and(eq(organizationMembers.orgId, orgId), eq(organizationMembers.email, email.toLowerCase())))
    .limit(1);
  return Boolean(row);
}

/** The organizations an email is a member of, earliest membership first. */
export async function membershipsOf(d1: D1Database, email: string): Promise<{ id: string; slug: string }[]> {
  return database(d1)
    .select({ id: organizations.id, slug: organizations.slug })
    .from(organizationMembers)
    .innerJoin(organizations, eq(organizations.id, organizationMembers.orgId))
    .where(eq(organizationMembers.email, email.toLowerCase()))
    .orderBy(asc(organizationMembers.createdAt), asc(organizations.slug));
}

/** The organization a member signs in to: their earliest membership (the switcher moves the session to another). */
export async function membershipFor(d1: D1Database, email: string): Promise<string | null> {
  return (await membershipsOf(d1, email))[0]?.id ?? null;
}

/**
 * Moves a member's session to another of their organizations; false (and nothing changes) when
 * the session names no email (a sign-in link's) or the email is not a member there.
 */
export async function switchOrganization(d1: D1Database, session: Pick<DashboardSession, "id" | "email">, orgId: string): Promise<boolean> {
  if (session.email === null || !(await isMember(d1, orgId, session.email))) return false;
  await database(d1).update(dashboardSessions).set({ orgId }).where(eq(dashboardSessions.id, session.id));
  return true;
}

/** The session's CSRF token: derived, not stored, so it needs no column and no second lookup. */
export function csrfTokenFor(signingKey: string, session: DashboardSession): Promise<string> {
  return hmacSha256Hex(signingKey, `dashboard-csrf\n${session.id}`);
}

/** Forgets expired sessions, spent or expired sign-in links, and sign-outs no token can predate any more (the cron trigger calls this). */
export async function deleteExpiredSignIns(d1: D1Database, now = Date.now()): Promise<void> {
  const db = database(d1);
  await db.batch([
    db.delete(dashboardSessions).where(lte(dashboardSessions.expiresAt, now)),
    db.delete(dashboardLoginLinks).where(or(lte(dashboardLoginLinks.expiresAt, now), isNotNull(dashboardLoginLinks.usedAt))),
    forgetOldSignOuts(d1, now),
  ]);
}
