// Signing in with a one-time link (DASHBOARD_SIGN_IN = "link"). Opening the link shows a page with
// a button; only that button's POST spends the link and opens a session, so a link preview or a
// mail scanner that fetches the URL neither spends it nor signs anyone in.
import { Hono } from "hono";
import type { AppEnv } from "../env.ts";
import { HttpError } from "../errors.ts";
import { requireSameOrigin, setSessionCookie } from "../middleware/session.ts";
import { openSession } from "../services/dashboard-sessions.ts";
import { consumeLoginLink, peekLoginLink } from "../services/login-links.ts";
import { Message } from "./layout.tsx";
import { render } from "./render.tsx";

const TOKEN_FIELD = "token";

const spent = () =>
  new HttpError(
    401,
    "This sign-in link was already used or has expired (links last 15 minutes and work once). Make a new one: npm run admin -- login-link <org-slug>",
  );

export const signIn = new Hono<AppEnv>()
  .use("/login", async (c, next) => {
    if (c.env.DASHBOARD_SIGN_IN !== "link") throw new HttpError(404, "Sign-in links are turned off here; the dashboard signs you in through Cloudflare Access");
    return next();
  })
  .get("/login", async (c) => {
    const token = c.req.query(TOKEN_FIELD) ?? "";
    const link = await peekLoginLink(c.env.DB, token);
    if (!link) throw spent();
    return render(
      c,
      <Message title="Sign in to cellseg">
        <p>
          This one-time link signs you in to the organization <strong>{link.slug}</strong>.
        </p>
        <form method="post" action="/dashboard/login">
          <input type="hidden" name={TOKEN_FIELD} value={token} />
          <button type="submit" class="primary">
            Sign in
          </button>
        </form>
      </Message>,
    );
  })
  // Same origin only: another site must not be able to sign a visitor in to an organization of its choosing.
  .post("/login", requireSameOrigin, async (c) => {
    const token = (await c.req.parseBody())[TOKEN_FIELD];
    const orgId = typeof token === "string" ? await consumeLoginLink(c.env.DB, token) : null;
    if (!orgId) throw spent();
    const { token: sessionToken } = await openSession(c.env.DB, orgId, null);
    setSessionCookie(c, sessionToken);
    return c.redirect("/dashboard", 303);
  })
  .get("/signed-out", (c) =>
    render(
      c,
      <Message title="Signed out">
        <p>You are signed out of the cellseg dashboard.</p>
      </Message>,
    ),
  );
