// The dashboard's sign-in and sessions: one-time links, the session cookie, CSRF protection, and
// a member seeing only their own organization, exactly like an API key.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { deleteExpiredSignIns } from "../../worker/services/dashboard-sessions.ts";
import { sha256Hex } from "../../worker/services/crypto.ts";
import { call, createOrg, json, uploadImage } from "./helpers.ts";
import { csrfOf, dashboardCall, followLoginLink, loginLink, ORIGIN, sessionCookie, signIn } from "./dashboard-helpers.ts";

describe("signing in with a one-time link", () => {
  it("opens a session once, from the button on the link's page; the same link is refused afterwards", async () => {
    const org = await createOrg();
    const link = await loginLink(org);
    const first = await followLoginLink(link);
    expect(first.status).toBe(303);
    expect(first.headers.get("Location")).toBe("/dashboard");
    const page = await call(`${ORIGIN}/dashboard`, { headers: { Cookie: sessionCookie(first) } });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain(org.slug);

    const again = await call(link, { redirect: "manual" });
    expect(again.status).toBe(401);
    expect(await again.text()).toContain("already used or has expired");
    const token = new URL(link).searchParams.get("token")!;
    const replayed = await call(`${ORIGIN}/dashboard/login`, { body: new URLSearchParams({ token }), headers: { Origin: ORIGIN }, redirect: "manual" });
    expect(replayed.status).toBe(401);
    expect(replayed.headers.get("Set-Cookie")).toBeNull();
  });

  it("spends nothing when the link is only opened (a link preview, a mail scanner): that shows a page with a Sign in button", async () => {
    const org = await createOrg();
    const link = await loginLink(org);
    for (let preview = 0; preview < 3; preview++) {
      const opened = await call(link, { redirect: "manual" });
      expect(opened.status).toBe(200);
      expect(opened.headers.get("Set-Cookie")).toBeNull();
      expect(opened.headers.get("Cache-Control")).toBe("private, no-store");
      const html = await opened.text();
      expect(html).toContain(`signs you in to the organization <strong>${org.slug}</strong>`);
      expect(html).toMatch(
        /<form method="post" action="\/dashboard\/login"><input type="hidden" name="token" value="[^"]+"\/><button type="submit" class="primary">Sign in<\/button><\/form>/,
      );
    }
    const unspent = await env.DB.prepare("SELECT used_at FROM dashboard_login_links WHERE org_id = ?1").bind(org.id).first<{ used_at: number | null }>();
    expect(unspent?.used_at).toBeNull();
    expect((await followLoginLink(link)).status).toBe(303);
  });

  it("refuses a sign-in posted from another site, and the link stays usable", async () => {
    const org = await createOrg();
    const link = await loginLink(org);
    const token = new URL(link).searchParams.get("token")!;
    for (const origin of ["https://evil.example", null]) {
      const forged = await call(`${ORIGIN}/dashboard/login`, {
        body: new URLSearchParams({ token }),
        headers: origin ? { Origin: origin } : {},
        redirect: "manual",
      });
      expect(forged.status).toBe(403);
      expect(forged.headers.get("Set-Cookie")).toBeNull();
    }
    expect((await followLoginLink(link)).status).toBe(303);
  });

  it("refuses a link older than 15 minutes, opened or posted", async () => {
    const org = await createOrg();
    const link = await loginLink(org);
    await env.DB.prepare("UPDATE dashboard_login_links SET expires_at = ?1 WHERE org_id = ?2")
      .bind(Date.now() - 1, org.id)
      .run();
    expect((await call(link, { redirect: "manual" })).status).toBe(401);
    const token = new URL(link).searchParams.get("token")!;
    expect((await call(`${ORIGIN}/dashboard/login`, { body: new URLSearchParams({ token }), headers: { Origin: ORIGIN }, redirect: "manual" })).status).toBe(
      401,
    );
  });

  it("stores only hashes of link and session tokens", async () => {
    const org = await createOrg();
    const link = await loginLink(org);
    const token = new URL(link).searchParams.get("token")!;
    const response = await followLoginLink(link);
    const cookieToken = sessionCookie(response).split("=")[1];
    const dump = JSON.stringify([
      ...(await env.DB.prepare("SELECT * FROM dashboard_login_links").all()).results,
      ...(await env.DB.prepare("SELECT * FROM dashboard_sessions").all()).results,
    ]);
    expect(dump).not.toContain(token);
    expect(dump).not.toContain(cookieToken);
  });

  it("forgets expired sessions and spent links on the cron sweep, keeping live ones", async () => {
    const org = await createOrg();
    const live = await signIn(org);
    const expired = await signIn(org);
    const unused = await loginLink(org);
    await env.DB.prepare("UPDATE dashboard_sessions SET expires_at = ?1 WHERE token_hash = ?2")
      .bind(Date.now() - 1, await sha256Hex(expired.cookie.split("=")[1]!))
      .run();
    await deleteExpiredSignIns(env.DB);
    expect((await dashboardCall(live, "/api/keys")).status).toBe(200);
    expect((await dashboardCall(expired, "/api/keys")).status).toBe(401);
    // The two links signIn spent are gone; the unused one stays.
    const remaining = (await env.DB.prepare("SELECT token_hash FROM dashboard_login_links WHERE org_id = ?1").bind(org.id).all<{ token_hash: string }>())
      .results;
    expect(remaining.map((r) => r.token_hash)).toEqual([await sha256Hex(new URL(unused).searchParams.get("token")!)]);
  });

  it("sets a __Host- session cookie: Secure, Path=/, no Domain, HttpOnly, SameSite=Lax, on this machine too", async () => {
    const org = await createOrg();
    for (const origin of [ORIGIN, "http://127.0.0.1:8787"]) {
      const setCookie = (await followLoginLink(await loginLink(org, origin))).headers.get("Set-Cookie")!;
      const [nameValue, ...attributes] = setCookie.split(/;\s*/);
      expect(nameValue, origin).toMatch(/^__Host-cellseg_session=[A-Za-z0-9_-]{43}$/);
      expect(attributes.map((a) => a.split("=")[0]!.toLowerCase()).sort(), origin).toEqual(["httponly", "max-age", "path", "samesite", "secure"]);
      expect(attributes, origin).toContain("Path=/");
      expect(attributes, origin).toContain("SameSite=Lax");
    }
  });

  it("answers without a session: a sign-in page for people, 401 {detail} for scripts", async () => {
    const page = await call(`${ORIGIN}/dashboard`);
    expect(page.status).toBe(401);
    expect(await page.text()).toContain("npm run admin -- login-link");
    const api = await call(`${ORIGIN}/dashboard/api/keys`);
    expect(api.status).toBe(401);
    expect(await json(api)).toEqual({ detail: expect.stringContaining("Sign in") });
  });

  it("signing out ends the session for good: its cookie is cleared, and replaying it opens nothing", async () => {
    const session = await signIn(await createOrg());
    const out = await dashboardCall(session, "/logout", {
      method: "POST",
      body: new URLSearchParams({ _csrf: session.csrf }),
      headers: { "X-CSRF-Token": "" },
    });
    expect(out.status).toBe(303);
    expect(out.headers.get("Location")).toBe("/dashboard/signed-out");
    expect(out.headers.get("Set-Cookie")).toMatch(/^__Host-cellseg_session=; Max-Age=0; Path=\/;/);
    expect((await dashboardCall(session, "/api/keys")).status).toBe(401);
    expect((await dashboardCall(session, "")).status).toBe(401);
  });
});

describe("CSRF protection", () => {
  it("refuses a state-changing request without the session's token or from another origin", async () => {
    const session = await signIn(await createOrg());
    const noToken = await dashboardCall(session, "/api/keys", { json: {}, headers: { "X-CSRF-Token": "" } });
    expect(noToken.status).toBe(403);
    const wrongToken = await dashboardCall(session, "/api/keys", { json: {}, headers: { "X-CSRF-Token": "0".repeat(64) } });
    expect(wrongToken.status).toBe(403);
    const otherSite = await dashboardCall(session, "/api/keys", { json: {}, headers: { Origin: "https://evil.example" } });
    expect(otherSite.status).toBe(403);
    expect(await json(otherSite)).toEqual({ detail: "Cross-site request refused" });
    const keys = await json<unknown[]>(await dashboardCall(session, "/api/keys"));
    expect(keys).toHaveLength(1); // only the key createOrg made
  });

  it("gives each session its own token", async () => {
    const org = await createOrg();
    const a = await signIn(org);
    const b = await signIn(org);
    expect(a.csrf).not.toBe(b.csrf);
    expect((await dashboardCall(a, "/api/keys", { json: {}, headers: { "X-CSRF-Token": b.csrf } })).status).toBe(403);
  });
});

describe("API keys from the dashboard", () => {
  it("creates a key shown once that the API accepts, lists it with when it was last used, and revokes it at once", async () => {
    const session = await signIn(await createOrg());
    const created = await dashboardCall(session, "/api/keys", { json: { name: "lab pipeline" } });
    expect(created.status).toBe(201);
    const key = await json<{ id: string; key: string; name: string; prefix: string; last_used_at: null }>(created);
    expect(key).toMatchObject({ name: "lab pipeline", last_used_at: null });
    expect(key.key.startsWith(key.prefix)).toBe(true);

    expect((await call("/models", { key: key.key })).status).toBe(200);
    const listed = await json<{ id: string; key?: string; last_used_at: string | null }[]>(await dashboardCall(session, "/api/keys"));
    const row = listed.find((k) => k.id === key.id)!;
    expect(row.key).toBeUndefined();
    expect(row.last_used_at).not.toBeNull();
    const page = await (await dashboardCall(session, "/keys")).text();
    expect(page).toContain("lab pipeline");
    expect(page).toContain(`${key.prefix}…`);

    const revoked = await dashboardCall(session, `/api/keys/${key.id}/revoke`, { method: "POST" });
    expect(revoked.status).toBe(200);
    expect((await call("/models", { key: key.key })).status).toBe(401);
    expect((await dashboardCall(session, `/api/keys/${key.id}/revoke`, { method: "POST" })).status).toBe(404);
  });
});

describe("a member sees only their organization", () => {
  it("answers another organization's image, key and segmentation exactly like missing ones", async () => {
    const a = await createOrg();
    const b = await createOrg();
    const image = await uploadImage(a);
    const aKeys = (await env.DB.prepare("SELECT id FROM api_keys WHERE org_id = ?1").bind(a.id).all<{ id: string }>()).results;
    expect(aKeys).toHaveLength(1); // the key createOrg made
    const aKey = aKeys[0]!;
    const session = await signIn(b);

    const foreign = await dashboardCall(session, `/api/image/${image.id}`);
    expect(foreign.status).toBe(404);
    expect(await json(foreign)).toEqual({ detail: `Image with id ${image.id} not found` });
    expect(await json(await dashboardCall(session, `/api/keys/${aKey.id}/revoke`, { method: "POST" }))).toEqual({ detail: `Key with id ${aKey.id} not found` });
    expect((await dashboardCall(session, `/api/image/${image.id}`, { method: "DELETE" })).status).toBe(404);
    expect((await dashboardCall(session, `/images/${image.id}`)).status).toBe(404);
    expect(await (await dashboardCall(session, "")).text()).not.toContain(image.id);

    const own = await signIn(a);
    const listing = await (await dashboardCall(own, "")).text();
    expect(listing).toContain("cells.png");
    expect(listing).toMatch(/Images and imports stored<\/span><strong>1 \/ 100<\/strong>/);
  });

  it("uploads and deletes through the same services as the API", async () => {
    const org = await createOrg();
    const session = await signIn(org);
    const form = new FormData();
    const { pngBytes } = await import("./helpers.ts");
    form.append("file", new File([pngBytes(16, 12)], "dash.png"));
    const uploaded = await dashboardCall(session, "/api/upload", { body: form });
    expect(uploaded.status).toBe(201);
    const { image } = await json<{ image: { id: string; upload_status: string; width: number } }>(uploaded);
    expect(image).toMatchObject({ upload_status: "ready", width: 16 });
    expect((await call(`/image/${image.id}`, { key: org.key })).status).toBe(200);
    expect((await dashboardCall(session, `/api/image/${image.id}`, { method: "DELETE" })).status).toBe(204);
    expect((await call(`/image/${image.id}`, { key: org.key })).status).toBe(404);
  });
});

describe("the pages", () => {
  it("render for a signed-in member with the CSRF token they need", async () => {
    const session = await signIn(await createOrg());
    for (const path of ["", "/keys", "/models"]) {
      const response = await dashboardCall(session, path);
      expect(response.status).toBe(200);
      expect(response.headers.get("Content-Type")).toContain("text/html");
      expect(csrfOf(await response.text())).toBe(session.csrf);
    }
    expect(await (await dashboardCall(session, "/models")).text()).toContain("cpsam");
  });
});
