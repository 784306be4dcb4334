// What the browser is told about every dashboard answer: a Content-Security-Policy under which
// only the worker's own scripts and stylesheets load (no inline script or style, no other
// origin), no framing, no MIME sniffing, referrers kept on this origin; and pages that need
// nothing that policy refuses.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { app } from "../../worker/app.ts";
import { call, createOrg, json, uploadImage } from "./helpers.ts";
import { directivesOf } from "./content-security-policy.ts";
import { dashboardCall, loginLink, ORIGIN, signIn } from "./dashboard-helpers.ts";
import { completePrediction } from "./runner-helpers.ts";

function expectDashboardPolicy(response: Response, where: string) {
  const policy = directivesOf(response.headers.get("Content-Security-Policy"));
  expect(policy, where).toMatchObject({
    "default-src": ["'none'"],
    "script-src": ["'self'"],
    "style-src": ["'self'"],
    "img-src": ["'self'"],
    "connect-src": ["'self'"],
    "form-action": ["'self'"],
    "base-uri": ["'none'"],
    "frame-ancestors": ["'none'"],
  });
  expect(response.headers.get("Content-Security-Policy"), where).not.toMatch(/unsafe|\*|data:|blob:/);
  expect(response.headers.get("X-Content-Type-Options"), where).toBe("nosniff");
  expect(response.headers.get("Referrer-Policy"), where).toBe("same-origin");
  expect(response.headers.get("X-Frame-Options"), where).toBe("DENY");
}

/** Whatever in a page the policy would refuse: inline scripts and styles, event handler attributes, javascript: URLs, other origins. */
function refusedByPolicy(html: string): string[] {
  const found: string[] = [];
  for (const [tag] of html.matchAll(/<script\b[^>]*>/g)) if (!/\ssrc="\/dashboard\/assets\/[\w.-]+\.js"/.test(tag)) found.push(tag);
  for (const [tag] of html.matchAll(/<style\b[^>]*>/g)) found.push(tag);
  for (const [attribute] of html.matchAll(/<[^>]*\s(style|on[a-z]+)=("[^"]*"|'[^']*'|[^\s>]+)/g)) found.push(attribute);
  for (const match of html.matchAll(/\s(?:src|href|action)="([^"]*)"/g)) {
    const url = match[1]!; // the group is not optional, so it is there whenever the pattern matched
    if (!/^(\/(?!\/)|#)/.test(url)) found.push(url);
  }
  return found;
}

describe("the dashboard's security headers", () => {
  it("come with every page, and no page needs an inline script, style or handler, or another origin", async () => {
    const org = await createOrg();
    const image = await uploadImage(org);
    const { prediction_id } = await json<{ prediction_id: string }>(await call("/predict", { key: org.key, json: { image_id: image.id, model_id: "cpsam" } }));
    await completePrediction(prediction_id);
    const { segmentation_id } = await json<{ segmentation_id: string }>(await call(`/predict/${prediction_id}`, { key: org.key }));
    const session = await signIn(org);

    for (const path of ["", "/keys", "/models", `/images/${image.id}`, `/segmentations/${segmentation_id}`]) {
      const response = await dashboardCall(session, path);
      expect(response.status, path).toBe(200);
      expectDashboardPolicy(response, path);
      const html = await response.text();
      expect(html, path).toContain('<script type="module" src="/dashboard/assets/dashboard.js">');
      expect(refusedByPolicy(html), path).toEqual([]);
    }
    // The usage meters' fills carry their width as data, which dashboard.js draws.
    expect(await (await dashboardCall(session, "")).text()).toMatch(/<div data-fraction="0\.010"><\/div>/);
  });

  it("come with the pages for people who are not signed in, error pages and JSON answers", async () => {
    const org = await createOrg();
    const session = await signIn(org);
    const answers: [string, Response][] = [
      ["a sign-in link's page", await call(await loginLink(org))],
      ["sign-in needed", await call(`${ORIGIN}/dashboard`)],
      ["signed out", await call(`${ORIGIN}/dashboard/signed-out`)],
      ["a spent sign-in link", await call(`${ORIGIN}/dashboard/login?token=spent`)],
      ["a missing image's page", await dashboardCall(session, "/images/no-such-image")],
      ["JSON", await dashboardCall(session, "/api/keys")],
      ["JSON refusal", await call(`${ORIGIN}/dashboard/api/keys`)],
      ["a path that does not exist", await dashboardCall(session, "/no/such/page")],
    ];
    for (const [what, response] of answers) {
      expectDashboardPolicy(response, what);
      if ((response.headers.get("Content-Type") ?? "").startsWith("text/html")) expect(refusedByPolicy(await response.text()), what).toEqual([]);
    }
  });

  it("let the scripts reach R2 directly only when upload parts go there, and sign-out leave for Access's domain only under Access", async () => {
    const r2 = await app.request(`${ORIGIN}/dashboard`, {}, { ...env, SIGNED_URL_MODE: "r2" as const, R2_ACCOUNT_ID: "0123abcd" });
    expect(directivesOf(r2.headers.get("Content-Security-Policy"))["connect-src"]).toEqual(["'self'", "https://0123abcd.r2.cloudflarestorage.com"]);
    const access = await app.request(
      `${ORIGIN}/dashboard`,
      {},
      { ...env, DASHBOARD_SIGN_IN: "access" as const, ACCESS_TEAM_DOMAIN: "lab.cloudflareaccess.com", ACCESS_AUD: "aud" },
    );
    expect(access.status).toBe(401);
    expect(directivesOf(access.headers.get("Content-Security-Policy"))["form-action"]).toEqual(["'self'", "https://lab.cloudflareaccess.com"]);
  });
});
