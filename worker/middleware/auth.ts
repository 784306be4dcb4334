// The one auth path. Organization keys reach the public API; runner tokens reach only the
// internal API. Each credential is refused (403) where it does not belong, and anything else is 401.
import { createMiddleware } from "hono/factory";
import type { AppEnv, Bindings } from "../env.ts";
import { HttpError } from "../errors.ts";
import { constantTimeEqual, sha256Hex } from "../services/crypto.ts";
import { organizationForKey } from "../services/organizations.ts";

const unauthenticated = () => new HttpError(401, "Requires authentication");

function bearer(header: string | undefined): string | null {
  const match = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  return match ? match[1] : null;
}

async function isRunnerToken(env: Bindings, token: string): Promise<boolean> {
  let match = false;
  // Check every configured token (no early exit) so timing does not tell which one matched.
  for (const candidate of (env.RUNNER_TOKENS ?? "").split(",").map((t) => t.trim()).filter(Boolean)) {
    if (await constantTimeEqual(candidate, token)) match = true;
  }
  return match;
}

export const requireOrganization = createMiddleware<AppEnv>(async (c, next) => {
  const token = bearer(c.req.header("Authorization"));
  if (!token) throw unauthenticated();
  const org = await organizationForKey(c.env.DB, token);
  if (org) {
    c.set("org", org);
    return next();
  }
  if (await isRunnerToken(c.env, token)) throw new HttpError(403, "Runner tokens may only use the internal API");
  throw unauthenticated();
});

export const requireRunner = createMiddleware<AppEnv>(async (c, next) => {
  const token = bearer(c.req.header("Authorization"));
  if (!token) throw unauthenticated();
  if (await isRunnerToken(c.env, token)) {
    c.set("runner", { tokenHash: await sha256Hex(token) });
    return next();
  }
  if (await organizationForKey(c.env.DB, token)) throw new HttpError(403, "Organization keys may not use the internal API");
  throw unauthenticated();
});
