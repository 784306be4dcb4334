// Signing in to the dashboard the way a person does: a one-time link as the admin CLI makes it,
// then the session cookie and the page's CSRF token on every later request.
import { env } from "cloudflare:workers";
import { SESSION_COOKIE_NAME } from "../../worker/middleware/session.ts";
import { createLoginLink } from "../../worker/operator/login-links.ts";
import { database } from "../../worker/storage/database.ts";
import { call, type CallOptions, type TestOrg } from "./helpers.ts";

export const ORIGIN = "http://cellseg.test";

export interface DashboardSession {
  cookie: string;
  csrf: string;
}

export async function loginLink(org: Pick<TestOrg, "slug">, origin = ORIGIN): Promise<string> {
  return createLoginLink(database(env.DB), org.slug, origin);
}

/** The session cookie a response sets, as a Cookie header a browser would send back. */
export function sessionCookie(response: Response): string {
  const setCookie = response.headers.get("Set-Cookie") ?? "";
  const match = new RegExp(`(?:^|, )${SESSION_COOKIE_NAME}=([^;]+)`).exec(setCookie);
  if (!match) throw new Error(`no session cookie in ${JSON.stringify(setCookie)}`);
  return `${SESSION_COOKIE_NAME}=${match[1]}`;
}

export function csrfOf(html: string): string {
  const match = /<meta name="csrf-token" content="([0-9a-f]+)"/.exec(html);
  if (!match) throw new Error("page has no CSRF token");
  return match[1]!; // the pattern matched, and its one group is not optional
}

/**
 * What a person does with a link: opens it (a page with a button, which spends nothing) and presses
 * the button, whose form POSTs the link's token from the page's own origin.
 */
export async function followLoginLink(link: string, origin = new URL(link).origin): Promise<Response> {
  const landing = await call(link, { redirect: "manual" });
  if (landing.status !== 200) return landing;
  const html = await landing.text();
  const form = /<form method="post" action="([^"]+)"><input type="hidden" name="token" value="([^"]*)"\/>/.exec(html);
  if (!form) throw new Error(`the sign-in page has no sign-in form: ${html}`);
  // The pattern matched, and neither of its groups is optional.
  return call(new URL(form[1]!, link).toString(), { body: new URLSearchParams({ token: form[2]! }), headers: { Origin: origin }, redirect: "manual" });
}

export async function signIn(org: Pick<TestOrg, "slug">): Promise<DashboardSession> {
  const response = await followLoginLink(await loginLink(org));
  if (response.status !== 303) throw new Error(`sign-in answered ${response.status}: ${await response.text()}`);
  const cookie = sessionCookie(response);
  const page = await call(`${ORIGIN}/dashboard`, { headers: { Cookie: cookie } });
  return { cookie, csrf: csrfOf(await page.text()) };
}

/** A request from the dashboard's own pages: cookie, CSRF header and this site's Origin. */
export function dashboardCall(session: DashboardSession, path: string, options: CallOptions = {}): Promise<Response> {
  return call(`${ORIGIN}/dashboard${path}`, {
    redirect: "manual",
    ...options,
    headers: { Cookie: session.cookie, "X-CSRF-Token": session.csrf, Origin: ORIGIN, ...options.headers },
  });
}
