// Sessions opened with one-time sign-in links: any member of the organization sees them on the
// keys page and in /dashboard/api/sessions, and can revoke one, which signs that browser out at
// its next request. Another organization's sessions, and sessions that belong to a person
// (Cloudflare Access), are neither listed nor revocable here.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createOrg, json } from "./helpers.ts";
import { type DashboardSession, dashboardCall, signIn } from "./dashboard-helpers.ts";

interface LinkSession {
  id: string;
  created_at: string;
  expires_at: string;
  current: boolean;
}

const sessionsSeenBy = async (session: DashboardSession) => json<LinkSession[]>(await dashboardCall(session, "/api/sessions"));
const currentId = async (session: DashboardSession) => (await sessionsSeenBy(session)).find((s) => s.current)!.id;
const revoke = (session: DashboardSession, id: string, headers: Record<string, string> = {}) =>
  dashboardCall(session, `/api/sessions/${id}/revoke`, { method: "POST", headers });

describe("sign-in link sessions", () => {
  it("are listed for the organization's members, newest first, with the one asking marked, on the keys page too", async () => {
    const org = await createOrg();
    const older = await signIn(org);
    const newer = await signIn(org);
    await signIn(await createOrg()); // another organization's

    const listed = await sessionsSeenBy(older);
    expect(listed).toHaveLength(2);
    expect(listed.map((s) => s.current)).toEqual([false, true]);
    expect(listed[0]!.id).toBe(await currentId(newer));
    for (const s of listed) expect(Date.parse(s.expires_at) - Date.parse(s.created_at)).toBe(12 * 60 * 60 * 1000);

    const page = await (await dashboardCall(older, "/keys")).text();
    expect(page).toContain("<h2>Sign-in link sessions</h2>");
    expect(page.match(/data-revoke-session="/g)).toHaveLength(2);
    expect(page).toContain(`<tr data-session-id="${listed[1]!.id}"><td>`);
    expect(page.match(/this browser/g)).toHaveLength(2); // the explanation and the badge on the asking session's row
  });

  it("can be revoked by any member: that browser is signed out at its next request, and revoking one's own signs out", async () => {
    const org = await createOrg();
    const mine = await signIn(org);
    const leaked = await signIn(org);
    const leakedId = await currentId(leaked);

    const revoked = await revoke(mine, leakedId);
    expect(revoked.status).toBe(204);
    expect((await dashboardCall(leaked, "/api/keys")).status).toBe(401);
    expect((await dashboardCall(leaked, "")).status).toBe(401);
    expect((await sessionsSeenBy(mine)).map((s) => s.id)).toEqual([await currentId(mine)]);
    expect((await revoke(mine, leakedId)).status).toBe(404); // already gone

    expect((await revoke(mine, await currentId(mine))).status).toBe(204);
    expect((await dashboardCall(mine, "/api/keys")).status).toBe(401);
  });

  it("of another organization are answered like missing ones, and stay signed in", async () => {
    const ours = await signIn(await createOrg());
    const theirs = await signIn(await createOrg());
    const theirId = await currentId(theirs);
    const refused = await revoke(ours, theirId);
    expect(refused.status).toBe(404);
    expect(await json(refused)).toEqual({ detail: `Session with id ${theirId} not found` });
    expect((await dashboardCall(theirs, "/api/keys")).status).toBe(200);
  });

  it("are revoked only with the session's CSRF token, from the dashboard's origin", async () => {
    const org = await createOrg();
    const mine = await signIn(org);
    const other = await signIn(org);
    const otherId = await currentId(other);
    expect((await revoke(mine, otherId, { "X-CSRF-Token": "" })).status).toBe(403);
    expect((await revoke(mine, otherId, { Origin: "https://evil.example" })).status).toBe(403);
    expect((await dashboardCall(other, "/api/keys")).status).toBe(200);
  });

  it("do not include a person's own session opened through Cloudflare Access", async () => {
    const org = await createOrg();
    const member = await signIn(org);
    const accessSessionId = crypto.randomUUID();
    await env.DB.prepare(
      "INSERT INTO dashboard_sessions (id, token_hash, org_id, email, expires_at, created_at) VALUES (?1, ?2, ?3, 'ada@lab.example', ?4, ?5)",
    )
      .bind(accessSessionId, "0".repeat(64), org.id, Date.now() + 3_600_000, Date.now())
      .run();
    expect((await sessionsSeenBy(member)).map((s) => s.id)).not.toContain(accessSessionId);
    expect((await revoke(member, accessSessionId)).status).toBe(404);
    expect(await env.DB.prepare("SELECT id FROM dashboard_sessions WHERE id = ?1").bind(accessSessionId).first()).not.toBeNull();
  });
});
