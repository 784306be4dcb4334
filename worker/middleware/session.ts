// The dashboard's auth path, beside the API's (auth.ts): a session cookie instead of a bearer key.
// It sets the same `org` the API key middleware sets, so the services see no difference.
// Deployed (DASHBOARD_SIGN_IN = "access"), every request must also carry a valid Cloudflare Access
// JWT whose email is the session's; a missing session is opened from it for the member's
// organization, unless the member signed out after Access issued it.
import type { Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../env.ts";
import { HttpError } from "../errors.ts";
import { type AccessIdentity, AccessJwtError, AccessKeysUnavailableError, verifyAccessJwt } from "../services/access-jwt.ts";
import { constantTimeEqual } from "../services/crypto.ts";
import { csrfTokenFor, membershipFor, openSession, sessionForToken, type DashboardSession } from "../services/dashboard-sessions.ts";
import { ACCESS_LOGOUT_PATH, signedOutSince } from "../services/dashboard-sign-outs.ts";
import { organizationById } from "../services/organizations.ts";
import { SESSION_TTL_MS } from "../services/sign-in-tokens.ts";

/**
 * The session cookie, `__Host-cellseg_session`: with that prefix a browser keeps it only when it is
 * Secure, has Path=/ and no Domain, so no other subdomain and no plain-HTTP page can set or shadow
 * it. (Browsers treat localhost and 127.0.0.1 as secure, so it works on `npm start` too.)
 */
const SESSION_COOKIE = "cellseg_session";
// Exported for its test only (test/worker/dashboard-helpers.ts).
export const SESSION_COOKIE_NAME = `__Host-${SESSION_COOKIE}`;
const CSRF_HEADER = "X-CSRF-Token";
export const CSRF_FIELD = "_csrf";

/** Sets the session cookie: __Host- (Secure, Path=/, no Domain), HttpOnly, SameSite=Lax. */
export function setSessionCookie(c: Context<AppEnv>, token: string): void {
  setCookie(c, SESSION_COOKIE, token, { prefix: "host", httpOnly: true, sameSite: "Lax", maxAge: Math.floor(SESSION_TTL_MS / 1000) });
}

function sessionToken(c: Context<AppEnv>): string | undefined {
  return getCookie(c, SESSION_COOKIE, "host");
}

export function clearSessionCookie(c: Context<AppEnv>): void {
  deleteCookie(c, SESSION_COOKIE, { prefix: "host", httpOnly: true, sameSite: "Lax" });
}

async function accessIdentity(c: Context<AppEnv>): Promise<AccessIdentity> {
  const { ACCESS_TEAM_DOMAIN: teamDomain, ACCESS_AUD: audience } = c.env;
  if (!teamDomain || !audience) throw new HttpError(500, "The dashboard is set to Cloudflare Access but ACCESS_TEAM_DOMAIN or ACCESS_AUD is not configured");
  const jwt = c.req.header("Cf-Access-Jwt-Assertion");
  if (!jwt) throw new HttpError(401, "Sign in through Cloudflare Access");
  try {
    return await verifyAccessJwt(jwt, { teamDomain, audience });
  } catch (error) {
    if (error instanceof AccessJwtError) throw new HttpError(401, `Cloudflare Access sign-in is not valid: ${error.message}`);
    if (error instanceof AccessKeysUnavailableError) {
      throw new HttpError(503, `Cloudflare Access's signing keys cannot be fetched right now; try again in ${error.retryAfterSeconds} s`, {
        "Retry-After": String(error.retryAfterSeconds),
      });
    }
    throw error;
  }
}

export const requireSession = createMiddleware<AppEnv>(async (c, next) => {
  const token = sessionToken(c);
  let found = token ? await sessionForToken(c.env.DB, token) : null;
  let session: DashboardSession | undefined = found?.session;
  if (c.env.DASHBOARD_SIGN_IN === "access") {
    const { email, issuedAt } = await accessIdentity(c);
    if (!found || found.session.email !== email) {
      const orgId = await membershipFor(c.env.DB, email);
      if (!orgId)
        throw new HttpError(403, `${email} is not a member of any organization; ask an administrator to run: npm run admin -- member add <org-slug> ${email}`);
      if (await signedOutSince(c.env.DB, email, issuedAt)) {
        throw new HttpError(
          401,
          `You signed out of the dashboard. To come back, sign in to Cloudflare Access again: ${new URL(c.req.url).origin}${ACCESS_LOGOUT_PATH} ends the Access session you signed out of, and the next visit asks for a new one`,
        );
      }
      const opened = await openSession(c.env.DB, orgId, email);
      setSessionCookie(c, opened.token);
      session = opened.session;
      found = { session, org: (await organizationById(c.env.DB, orgId))! };
    }
  }
  if (!found || !session) {
    if (token) clearSessionCookie(c);
    throw new HttpError(401, "Sign in to the dashboard with a link from: npm run admin -- login-link <org-slug>");
  }
  c.set("org", found.org);
  c.set("dashboard", { sessionId: session.id, email: session.email, csrfToken: await csrfTokenFor(c.env.SIGNING_KEY, session) });
  return next();
});

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** Browsers send Origin on every POST; a page of another site cannot make it this worker's. */
function refuseOtherOrigins(c: Context<AppEnv>): void {
  if (c.req.header("Origin") !== new URL(c.req.url).origin) throw new HttpError(403, "Cross-site request refused");
}

/** Refuses a request whose Origin is not this worker's (the sign-in form, which has no session yet). */
export const requireSameOrigin = createMiddleware<AppEnv>(async (c, next) => {
  refuseOtherOrigins(c);
  return next();
});

/**
 * Refuses state-changing requests that another site could have made: the Origin must be this
 * worker's, and the session's CSRF token must come back (header for scripts, hidden field for forms).
 */
export const requireCsrf = createMiddleware<AppEnv>(async (c, next) => {
  if (SAFE_METHODS.has(c.req.method)) return next();
  refuseOtherOrigins(c);
  let sent = c.req.header(CSRF_HEADER);
  if (!sent && (c.req.header("Content-Type") ?? "").startsWith("application/x-www-form-urlencoded")) {
    const field = (await c.req.parseBody())[CSRF_FIELD];
    sent = typeof field === "string" ? field : undefined;
  }
  if (!sent || !(await constantTimeEqual(sent, c.get("dashboard").csrfToken))) throw new HttpError(403, "Missing or invalid CSRF token; reload the page");
  return next();
});
