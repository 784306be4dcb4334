// Response headers that keep the dashboard's and the API reference's pages to themselves (hono's
// secureHeaders): a Content-Security-Policy under which only the worker's own scripts run (no
// inline script, nothing from another origin, so neither a compromised CDN nor injected markup can
// read a member's CSRF token), no framing by any site, no MIME sniffing, and referrers that never
// leave this origin.
import type { Context } from "hono";
import { type ContentSecurityPolicyOptionHandler, NONCE, secureHeaders } from "hono/secure-headers";
import type { Bindings } from "../env.ts";
import { teamOrigin } from "../services/access-jwt.ts";

const bindings = (c: Context) => c.env as Bindings;

const common = {
  // same-origin, not no-referrer: under no-referrer a browser sends `Origin: null` on the pages'
  // own form posts and fetches, which the CSRF check (middleware/session.ts) rightly refuses.
  referrerPolicy: "same-origin",
  xContentTypeOptions: "nosniff",
  // For browsers that predate frame-ancestors.
  xFrameOptions: "DENY",
  // HTTPS for the whole hostname is the zone's setting (Cloudflare's "Always Use HTTPS", HSTS), not one path's.
  strictTransportSecurity: false,
} as const;

/** Upload parts go straight to R2's S3 endpoint when SIGNED_URL_MODE = "r2"; otherwise back to this worker. */
const r2Endpoint: ContentSecurityPolicyOptionHandler = (c) => {
  const env = bindings(c);
  return env.SIGNED_URL_MODE === "r2" && env.R2_ACCOUNT_ID ? `https://${env.R2_ACCOUNT_ID}.r2.cloudflarestorage.com` : "";
};

/** Signing out under Cloudflare Access goes through Access's logout, which may redirect the form's navigation to the team's domain. */
const accessTeam: ContentSecurityPolicyOptionHandler = (c) => {
  const env = bindings(c);
  return env.DASHBOARD_SIGN_IN === "access" && env.ACCESS_TEAM_DOMAIN ? teamOrigin(env.ACCESS_TEAM_DOMAIN) : "";
};

/** The dashboard: its scripts and stylesheet from /dashboard/assets, its data from /dashboard/api. */
export const dashboardSecurityHeaders = secureHeaders({
  ...common,
  contentSecurityPolicy: {
    defaultSrc: ["'none'"],
    scriptSrc: ["'self'"],
    styleSrc: ["'self'"],
    imgSrc: ["'self'"],
    connectSrc: ["'self'", r2Endpoint],
    formAction: ["'self'", accessTeam],
    baseUri: ["'none'"],
    frameAncestors: ["'none'"],
  },
});

/** The API reference (/api/v1/docs): no script at all, only its own inline stylesheet (by nonce) and the favicon. */
export const referenceSecurityHeaders = secureHeaders({
  ...common,
  contentSecurityPolicy: {
    defaultSrc: ["'none'"],
    scriptSrc: ["'none'"],
    styleSrc: [NONCE],
    imgSrc: ["'self'"],
    formAction: ["'none'"],
    baseUri: ["'none'"],
    frameAncestors: ["'none'"],
  },
});
