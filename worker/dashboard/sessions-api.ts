// The organization's sign-in-link sessions, for its members (under /dashboard/api, behind the
// session and CSRF middleware): a link that leaked, or a browser left signed in somewhere, can be
// ended by any member. Sessions opened through Cloudflare Access belong to a person and end with
// their sign-out or their membership.
import { Hono } from "hono";
import { pathId } from "../../schema/api.ts";
import type { AppEnv } from "../env.ts";
import { notFound } from "../errors.ts";
import { linkSessionsOf, linkSessionView, revokeLinkSession } from "../services/dashboard-sessions.ts";
import { validate } from "../validation.ts";

export const sessionsApi = new Hono<AppEnv>()
  .get("/sessions", async (c) => {
    const current = c.get("dashboard").sessionId;
    return c.json((await linkSessionsOf(c.env.DB, c.get("org").id)).map((s) => linkSessionView(s, current)));
  })
  .post("/sessions/:id/revoke", validate("param", pathId), async (c) => {
    const { id } = c.req.valid("param");
    if (!(await revokeLinkSession(c.env.DB, c.get("org").id, id))) throw notFound("Session", id);
    return c.body(null, 204);
  });
