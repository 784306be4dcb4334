// Deployed sign-in: Cloudflare Access's JWT, verified against a JWKS this test makes with its own
// RSA key pair and serves in place of https://<team>/cdn-cgi/access/certs (no network).
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { app } from "../../worker/app.ts";
import { addMember } from "../../worker/operator/members.ts";
import { AccessJwtError, AccessKeysUnavailableError, JWKS_FAILURE_BACKOFF_MS, JWKS_TTL_MS, verifyAccessJwt } from "../../worker/services/access-jwt.ts";
import { database } from "../../worker/storage/database.ts";
import { deleteExpiredSignIns } from "../../worker/services/dashboard-sessions.ts";
import { recordSignOut, SIGN_OUT_MEMORY_MS, signedOutSince } from "../../worker/services/dashboard-sign-outs.ts";
import { createOrg, json, uploadImage } from "./helpers.ts";
import { csrfOf, sessionCookie } from "./dashboard-helpers.ts";

const AUD = "a1b2c3d4e5f6access-aud-tag";
let teams = 0;
/** Each test has its own team, so the verifier's JWKS cache never carries over. */
const newTeam = () => `team-${++teams}-${crypto.randomUUID().slice(0, 6)}.cloudflareaccess.com`;

async function keyPair(kid: string) {
  const pair = (await crypto.subtle.generateKey(
    { name: "RSASSA-PKCS1-v1_5", modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: "SHA-256" },
    true,
    ["sign", "verify"],
  )) as CryptoKeyPair;
  const jwk = (await crypto.subtle.exportKey("jwk", pair.publicKey)) as JsonWebKey;
  return { privateKey: pair.privateKey, jwk: { kty: jwk.kty, n: jwk.n, e: jwk.e, kid, alg: "RS256", use: "sig" } };
}

const b64url = (bytes: Uint8Array | string) => {
  const raw = typeof bytes === "string" ? new TextEncoder().encode(bytes) : bytes;
  return btoa(String.fromCharCode(...raw))
    .replaceAll("+", "-")
    .replaceAll("/", "_")
    .replace(/=+$/, "");
};

async function sign(privateKey: CryptoKey, header: Record<string, unknown>, claims: Record<string, unknown>): Promise<string> {
  const input = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(claims))}`;
  const signature = new Uint8Array(await crypto.subtle.sign("RSASSA-PKCS1-v1_5", privateKey, new TextEncoder().encode(input)));
  return `${input}.${b64url(signature)}`;
}

const now = () => Math.floor(Date.now() / 1000);
const claimsFor = (team: string, email: string, extra: Record<string, unknown> = {}) => ({
  aud: [AUD],
  email,
  iss: `https://${team}`,
  iat: now(),
  nbf: now(),
  exp: now() + 600,
  sub: "user-1",
  type: "app",
  ...extra,
});

async function setUp() {
  const team = newTeam();
  const key = await keyPair("kid-1");
  const fetched: string[] = [];
  const fetcher = async (url: string) => {
    fetched.push(url);
    return { keys: [key.jwk] };
  };
  return { team, key, fetched, fetcher, config: { teamDomain: team, audience: AUD } };
}

describe("verifying a Cloudflare Access JWT", () => {
  it("accepts a token signed by the team's key for this application, and caches the keys", async () => {
    const { team, key, fetched, fetcher, config } = await setUp();
    const token = await sign(key.privateKey, { alg: "RS256", kid: "kid-1" }, claimsFor(team, "Ada@Lab.example"));
    expect((await verifyAccessJwt(token, config, fetcher)).email).toBe("ada@lab.example");
    expect((await verifyAccessJwt(token, config, fetcher)).email).toBe("ada@lab.example");
    expect(fetched).toEqual([`https://${team}/cdn-cgi/access/certs`]);
  });

  it.each([
    ["another application's audience", { aud: ["someone-else"] }, "another Access application"],
    ["an expired token", { exp: now() - 120 }, "expired"],
    ["a token from another team", { iss: "https://other.cloudflareaccess.com" }, "another team"],
    ["a token not valid yet", { nbf: now() + 600 }, "not valid yet"],
    ["a service token without email", { email: undefined }, "no email"],
    ["a token without an issue time", { iat: undefined }, "no issue time"],
  ])("refuses %s", async (_what, change, message) => {
    const { team, key, fetcher, config } = await setUp();
    const token = await sign(key.privateKey, { alg: "RS256", kid: "kid-1" }, { ...claimsFor(team, "ada@lab.example"), ...change });
    await expect(verifyAccessJwt(token, config, fetcher)).rejects.toThrow(message);
  });

  it("refuses a token signed by a key the team does not publish, or with a forged signature", async () => {
    const { team, key, fetcher, config } = await setUp();
    const stranger = await keyPair("kid-1");
    const forged = await sign(stranger.privateKey, { alg: "RS256", kid: "kid-1" }, claimsFor(team, "ada@lab.example"));
    await expect(verifyAccessJwt(forged, config, fetcher)).rejects.toThrow("bad signature");
    const unknownKid = await sign(key.privateKey, { alg: "RS256", kid: "kid-9" }, claimsFor(team, "ada@lab.example"));
    await expect(verifyAccessJwt(unknownKid, config, fetcher)).rejects.toThrow("does not publish");
    const genuine = await sign(key.privateKey, { alg: "RS256", kid: "kid-1" }, claimsFor(team, "ada@lab.example"));
    const [h, , s] = genuine.split(".");
    const tampered = `${h}.${b64url(JSON.stringify(claimsFor(team, "eve@lab.example")))}.${s}`;
    await expect(verifyAccessJwt(tampered, config, fetcher)).rejects.toThrow("bad signature");
  });

  it("refuses unsigned and malformed tokens", async () => {
    const { team, config, fetcher } = await setUp();
    const unsigned = `${b64url(JSON.stringify({ alg: "none" }))}.${b64url(JSON.stringify(claimsFor(team, "a@b.example")))}.`;
    await expect(verifyAccessJwt(unsigned, config, fetcher)).rejects.toBeInstanceOf(AccessJwtError);
    await expect(verifyAccessJwt("not-a-jwt", config, fetcher)).rejects.toThrow("malformed");
  });

  it("fetches the keys again when Access rotates them", async () => {
    const { team, fetched, config } = await setUp();
    const old = await keyPair("old");
    const rotated = await keyPair("new");
    let published = [old.jwk];
    const fetcher = async (url: string) => {
      fetched.push(url);
      return { keys: published };
    };
    await verifyAccessJwt(await sign(old.privateKey, { alg: "RS256", kid: "old" }, claimsFor(team, "a@b.example")), config, fetcher, Date.now());
    published = [rotated.jwk];
    const later = Date.now() + 60_000;
    const identity = await verifyAccessJwt(
      await sign(rotated.privateKey, { alg: "RS256", kid: "new" }, claimsFor(team, "a@b.example")),
      config,
      fetcher,
      later,
    );
    expect(identity.email).toBe("a@b.example");
    expect(fetched).toHaveLength(2);
  });
});

describe("the team's keys", () => {
  it("are kept a few minutes, then fetched again", async () => {
    const { team, key, fetched, fetcher, config } = await setUp();
    const token = await sign(key.privateKey, { alg: "RS256", kid: "kid-1" }, claimsFor(team, "a@b.example"));
    const start = Date.now();
    await verifyAccessJwt(token, config, fetcher, start);
    await verifyAccessJwt(token, config, fetcher, start + JWKS_TTL_MS - 1);
    expect(fetched).toHaveLength(1);
    await verifyAccessJwt(token, config, fetcher, start + JWKS_TTL_MS + 1);
    expect(fetched).toHaveLength(2);
    expect(JWKS_TTL_MS).toBeLessThanOrEqual(10 * 60 * 1000);
  });

  it("that cannot be fetched make the token unjudgeable, not refused; Access is asked again only after a short pause", async () => {
    const { team, key, config } = await setUp();
    const token = await sign(key.privateKey, { alg: "RS256", kid: "kid-1" }, claimsFor(team, "a@b.example"));
    let answers: (() => { keys: JsonWebKey[] })[] = [
      () => {
        throw new Error("connect ETIMEDOUT");
      },
      () => ({ html: "<h1>502 Bad Gateway</h1>" }) as never,
      () => ({ keys: [key.jwk] }),
    ];
    let fetches = 0;
    const fetcher = async () => {
      fetches++;
      const [answer, ...rest] = answers;
      if (!answer) throw new Error("Access was asked for its keys more often than this test answers");
      answers = rest;
      return answer();
    };
    const start = Date.now();
    const failure = await verifyAccessJwt(token, config, fetcher, start).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(AccessKeysUnavailableError);
    expect(failure).not.toBeInstanceOf(AccessJwtError);
    expect((failure as AccessKeysUnavailableError).retryAfterSeconds).toBe(JWKS_FAILURE_BACKOFF_MS / 1000);
    // Within the pause no request goes to Access, and the answer says how long is left.
    const during = await verifyAccessJwt(token, config, fetcher, start + 4_000).catch((error: unknown) => error);
    expect(during).toBeInstanceOf(AccessKeysUnavailableError);
    expect((during as AccessKeysUnavailableError).retryAfterSeconds).toBe(JWKS_FAILURE_BACKOFF_MS / 1000 - 4);
    expect(fetches).toBe(1);
    // An answer that is not a key set is a failure too.
    await expect(verifyAccessJwt(token, config, fetcher, start + JWKS_FAILURE_BACKOFF_MS)).rejects.toBeInstanceOf(AccessKeysUnavailableError);
    expect(fetches).toBe(2);
    expect((await verifyAccessJwt(token, config, fetcher, start + 2 * JWKS_FAILURE_BACKOFF_MS)).email).toBe("a@b.example");
    expect(fetches).toBe(3);
  });
});

describe("the dashboard behind Cloudflare Access", () => {
  afterEach(() => vi.restoreAllMocks());

  async function accessWorker() {
    const { team, key } = await setUp();
    // The verifier fetches the team's certs with the global fetch; answer it here instead of the network.
    vi.spyOn(globalThis, "fetch").mockImplementation(async (input) => {
      const url = input instanceof Request ? input.url : String(input);
      if (url !== `https://${team}/cdn-cgi/access/certs`) throw new Error(`unexpected fetch ${url}`);
      return Response.json({ keys: [key.jwk] });
    });
    const accessEnv = { ...env, DASHBOARD_SIGN_IN: "access" as const, ACCESS_TEAM_DOMAIN: team, ACCESS_AUD: AUD };
    /** A request Access let through for `email` (none: null); `claims` changes the token, e.g. its issue time. */
    const request = async (path: string, email: string | null, init: RequestInit = {}, claims: Record<string, unknown> = {}) => {
      const headers = new Headers(init.headers);
      if (email) headers.set("Cf-Access-Jwt-Assertion", await sign(key.privateKey, { alg: "RS256", kid: "kid-1" }, claimsFor(team, email, claims)));
      return app.request(`https://cellseg.example${path}`, { ...init, headers, redirect: "manual" }, accessEnv);
    };
    return { request };
  }

  it("signs a member in to their organization and only theirs", async () => {
    const org = await createOrg();
    const other = await createOrg();
    const foreign = await uploadImage(other);
    await addMember(database(env.DB), org.slug, "Grace@Lab.example");
    const { request } = await accessWorker();

    const page = await request("/dashboard", "grace@lab.example");
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain(org.slug);
    expect(html).toContain("grace@lab.example");
    const cookie = page.headers.get("Set-Cookie")!;
    expect(cookie).toMatch(/Secure/);
    expect(cookie).toMatch(/HttpOnly/);

    const image = await request(`/dashboard/api/image/${foreign.id}`, "grace@lab.example", { headers: { Cookie: sessionCookie(page) } });
    expect(await json(image)).toEqual({ detail: `Image with id ${foreign.id} not found` });
  });

  it("refuses a request without the Access JWT, and a person who is not a member", async () => {
    const { request } = await accessWorker();
    expect((await request("/dashboard", null)).status).toBe(401);
    const stranger = await request("/dashboard", "mallory@elsewhere.example");
    expect(stranger.status).toBe(403);
    expect(await stranger.text()).toContain("member add");
  });

  it("does not let a session cookie stand in for the Access JWT, nor outlive the membership", async () => {
    const org = await createOrg();
    await addMember(database(env.DB), org.slug, "lin@lab.example");
    const { request } = await accessWorker();
    const cookie = sessionCookie(await request("/dashboard", "lin@lab.example"));
    expect((await request("/dashboard", null, { headers: { Cookie: cookie } })).status).toBe(401);
    await env.DB.prepare("DELETE FROM organization_members WHERE email = 'lin@lab.example'").run();
    expect((await request("/dashboard", "lin@lab.example", { headers: { Cookie: cookie } })).status).toBe(403);
  });

  it("lets a member of several organizations switch between them, and nowhere else", async () => {
    const lab = await createOrg();
    const core = await createOrg();
    const foreign = await createOrg();
    const coreImage = await uploadImage(core, "core-facility.png");
    await addMember(database(env.DB), lab.slug, "ada@lab.example");
    await addMember(database(env.DB), core.slug, "ada@lab.example");
    const { request } = await accessWorker();
    const first = await request("/dashboard", "ada@lab.example");
    const cookie = sessionCookie(first);
    const html = await first.text();
    expect(html).toContain(`<option value="${lab.id}" selected="">${lab.slug}</option>`);
    expect(html).toContain(`<option value="${core.id}">${core.slug}</option>`);
    expect(html).not.toContain(foreign.slug);
    const csrf = csrfOf(html);
    const post = (orgId: string, token = csrf) =>
      request("/dashboard/switch-organization", "ada@lab.example", {
        method: "POST",
        headers: { Cookie: cookie, Origin: "https://cellseg.example", "Content-Type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ _csrf: token, org_id: orgId }),
      });

    expect((await post(core.id, "0".repeat(64))).status).toBe(403);
    const refused = await post(foreign.id);
    expect(refused.status).toBe(404);
    expect(await refused.text()).toContain(`Organization with id ${foreign.id} not found`);

    const switched = await post(core.id);
    expect(switched.status).toBe(303);
    expect(switched.headers.get("Location")).toBe("/dashboard");
    const now = await (await request("/dashboard", "ada@lab.example", { headers: { Cookie: cookie } })).text();
    expect(now).toContain(`<option value="${core.id}" selected="">${core.slug}</option>`);
    expect(now).toContain("core-facility.png");
    const image = await request(`/dashboard/api/image/${coreImage.id}`, "ada@lab.example", { headers: { Cookie: cookie } });
    expect(image.status).toBe(200);
  });

  it("shows no switcher to a member of one organization", async () => {
    const org = await createOrg();
    await addMember(database(env.DB), org.slug, "solo@lab.example");
    const { request } = await accessWorker();
    const html = await (await request("/dashboard", "solo@lab.example")).text();
    expect(html).toContain(`<span class="org" title="Your organization">${org.slug}</span>`);
    expect(html).not.toContain("org-switcher");
  });

  it("answers 503 with Retry-After, not 500, while Access's keys cannot be fetched", async () => {
    const team = newTeam();
    const { key } = await setUp();
    vi.spyOn(globalThis, "fetch").mockImplementation(async () => new Response("upstream trouble", { status: 502 }));
    const accessEnv = { ...env, DASHBOARD_SIGN_IN: "access" as const, ACCESS_TEAM_DOMAIN: team, ACCESS_AUD: AUD };
    const jwt = await sign(key.privateKey, { alg: "RS256", kid: "kid-1" }, claimsFor(team, "ada@lab.example"));
    const request = (path: string) => app.request(`https://cellseg.example${path}`, { headers: { "Cf-Access-Jwt-Assertion": jwt } }, accessEnv);

    const page = await request("/dashboard");
    expect(page.status).toBe(503);
    expect(Number(page.headers.get("Retry-After"))).toBeGreaterThan(0);
    expect(await page.text()).toContain("Try again shortly");
    const api = await request("/dashboard/api/keys");
    expect(api.status).toBe(503);
    expect(Number(api.headers.get("Retry-After"))).toBeGreaterThan(0);
    expect(await json(api)).toEqual({ detail: expect.stringMatching(/^Cloudflare Access's signing keys cannot be fetched right now; try again in \d+ s$/) });
  });

  it("signs out for good: through Access's logout, and a token Access issued before the sign-out opens no new session", async () => {
    const org = await createOrg();
    await addMember(database(env.DB), org.slug, "ines@lab.example");
    await addMember(database(env.DB), org.slug, "omar@lab.example");
    const { request } = await accessWorker();
    const signedInAt = { iat: now() - 60 };
    const first = await request("/dashboard", "ines@lab.example", {}, signedInAt);
    expect(first.status).toBe(200);
    const cookie = sessionCookie(first);
    const csrf = csrfOf(await first.text());

    const out = await request(
      "/dashboard/logout",
      "ines@lab.example",
      { method: "POST", headers: { Cookie: cookie, Origin: "https://cellseg.example" }, body: new URLSearchParams({ _csrf: csrf }) },
      signedInAt,
    );
    expect(out.status).toBe(303);
    expect(out.headers.get("Location")).toBe("/cdn-cgi/access/logout");
    expect(out.headers.get("Set-Cookie")).toMatch(/^__Host-cellseg_session=; Max-Age=0; Path=\/;/);
    const sessions = () => env.DB.prepare("SELECT count(*) AS n FROM dashboard_sessions WHERE email = 'ines@lab.example'").first<{ n: number }>();
    expect((await sessions())?.n).toBe(0);

    // The browser still holds the token Access issued before the sign-out (Access's logout did not happen, another tab...).
    for (const init of [{ headers: { Cookie: cookie } }, {}]) {
      const again = await request("/dashboard", "ines@lab.example", init, signedInAt);
      expect(again.status).toBe(401);
      expect(again.headers.get("Set-Cookie") ?? "").not.toMatch(/cellseg_session=[^;]/);
      expect(await again.text()).toContain("You signed out of the dashboard");
      expect(await json(await request("/dashboard/api/keys", "ines@lab.example", init, signedInAt))).toEqual({
        detail: expect.stringContaining("You signed out of the dashboard"),
      });
    }
    expect((await sessions())?.n).toBe(0);

    // Signing in to Access again issues a new token: that opens a session. Other members never noticed.
    expect((await request("/dashboard", "ines@lab.example", {}, { iat: now() + 2 })).status).toBe(200);
    expect((await request("/dashboard", "omar@lab.example", {}, signedInAt)).status).toBe(200);
  });

  it("forgets a sign-out once no token Access issued before it can still be valid", async () => {
    await recordSignOut(env.DB, "old@lab.example", Date.now() - SIGN_OUT_MEMORY_MS - 1);
    await recordSignOut(env.DB, "recent@lab.example", Date.now() - SIGN_OUT_MEMORY_MS + 60_000);
    await deleteExpiredSignIns(env.DB);
    expect(await signedOutSince(env.DB, "old@lab.example", 0)).toBe(false);
    expect(await signedOutSince(env.DB, "recent@lab.example", 0)).toBe(true);
  });

  it("turns sign-in links off", async () => {
    const { request } = await accessWorker();
    expect((await request("/dashboard/login?token=anything", null)).status).toBe(404);
  });
});
