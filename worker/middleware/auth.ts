// The one auth path. Organization keys reach the public API; runner tokens reach only the
// internal API (the fleet's every organization's jobs, a scoped one its organizations': runner-scopes.ts); the local operator secret reaches only the operator API (and exists only where
// `npm start` made one). Each credential is refused (403) where it does not belong, and anything
// else is 401.
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../env.ts";
import { HttpError } from "../errors.ts";
import { constantTimeEqual } from "../services/crypto.ts";
import { organizationForKey } from "../services/organizations.ts";
import { runnerScopeOf } from "../services/runner-scopes.ts";

/**
 * 401 with the contract's detail, `Requires authentication`, for every credential problem; the
 * WWW-Authenticate header tells a missing key from one that was refused (RFC 6750's `invalid_token`),
 * and a refused key is answered alike whether it never existed, was revoked or is mistyped.
 */
const AUTHENTICATE = {
  missing: 'Bearer realm="cellseg", error_description="No API key was sent: send Authorization: Bearer <key>"',
  refused: 'Bearer realm="cellseg", error="invalid_token", error_description="The API key was not accepted"',
} as const;
const unauthenticated = (why: keyof typeof AUTHENTICATE) => new HttpError(401, "Requires authentication", { "WWW-Authenticate": AUTHENTICATE[why] });

function bearer(header: string | undefined): string | null {
  const match = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  return match?.[1] ?? null;
}

export const requireOrganization = createMiddleware<AppEnv>(async (c, next) => {
  const token = bearer(c.req.header("Authorization"));
  if (!token) throw unauthenticated("missing");
  const org = await organizationForKey(c.env.DB, token);
  if (org) {
    c.set("org", org);
    return next();
  }
  if (await runnerScopeOf(c.env, token)) throw new HttpError(403, "Runner tokens may only use the internal API");
  throw unauthenticated("refused");
});

export const requireRunner = createMiddleware<AppEnv>(async (c, next) => {
  const token = bearer(c.req.header("Authorization"));
  if (!token) throw unauthenticated("missing");
  const scope = await runnerScopeOf(c.env, token);
  if (scope) {
    c.set("runner", scope);
    return next();
  }
  if (await organizationForKey(c.env.DB, token)) throw new HttpError(403, "Organization keys may not use the internal API");
  throw unauthenticated("refused");
});

/**
 * The operator API, for the admin CLI beside a running local stack. Without OPERATOR_SECRET
 * (deployed environments never set one) it does not exist: 404, whatever the credential.
 */
export const requireOperator = createMiddleware<AppEnv>(async (c, next) => {
  const secret = c.env.OPERATOR_SECRET;
  if (!secret) throw new HttpError(404, "Not Found");
  const token = bearer(c.req.header("Authorization"));
  if (!token) throw unauthenticated("missing");
  if (await constantTimeEqual(secret, token)) return next();
  if ((await runnerScopeOf(c.env, token)) || (await organizationForKey(c.env.DB, token))) {
    throw new HttpError(403, "Only the operator secret may use the operator API");
  }
  throw unauthenticated("refused");
});
