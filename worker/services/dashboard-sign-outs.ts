// Signing out under Cloudflare Access. Access keeps vouching for a person until its own session
// ends, so the dashboard remembers when each person signed out: an Access token issued before
// then opens no new session, and signing out stays signed out even if Access's logout did not
// happen (another tab, a browser that kept its cookie). A token from a new Access sign-in is
// issued later and opens one as usual.
import { and, eq, gt, lte } from "drizzle-orm";
import { dashboardSignOuts } from "../../schema/db.ts";
import { database } from "../storage/database.ts";

/** Where Access ends its session for this application (on the application's own hostname). */
export const ACCESS_LOGOUT_PATH = "/cdn-cgi/access/logout";

// Exported for its test only (test/worker/dashboard-access.test.ts).
/** Longer than Access lets an application session last (a month at most), so every token issued before a sign-out is refused while it is valid. */
export const SIGN_OUT_MEMORY_MS = 31 * 24 * 60 * 60 * 1000;

export async function recordSignOut(d1: D1Database, email: string, at = Date.now()): Promise<void> {
  await database(d1)
    .insert(dashboardSignOuts)
    .values({ email: email.toLowerCase(), signedOutAt: at })
    .onConflictDoUpdate({ target: dashboardSignOuts.email, set: { signedOutAt: at } });
}

/** Whether the person signed out after Access issued this token (so it must not open a session). */
export async function signedOutSince(d1: D1Database, email: string, issuedAt: number): Promise<boolean> {
  const [row] = await database(d1)
    .select({ email: dashboardSignOuts.email })
    .from(dashboardSignOuts)
    .where(and(eq(dashboardSignOuts.email, email.toLowerCase()), gt(dashboardSignOuts.signedOutAt, issuedAt)))
    .limit(1);
  return Boolean(row);
}

/** The cron's part: sign-outs older than any token they could still refuse. */
export function forgetOldSignOuts(d1: D1Database, now: number) {
  return database(d1)
    .delete(dashboardSignOuts)
    .where(lte(dashboardSignOuts.signedOutAt, now - SIGN_OUT_MEMORY_MS));
}
