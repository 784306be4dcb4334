import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { JSX } from "hono/jsx/jsx-runtime";
import type { AppEnv } from "../env.ts";

/** A dashboard page: HTML, never cached (it carries the session's CSRF token, or a sign-in link's). */
export function render(c: Context<AppEnv>, page: JSX.Element, status: ContentfulStatusCode = 200) {
  c.header("Cache-Control", "private, no-store");
  return c.html(`<!doctype html>${page}`, status);
}
