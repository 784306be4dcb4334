// The admin CLI's way into a deployed D1 database (scripts/deployed-database.ts), against a stand-in
// for the D1 REST API's raw query endpoint: node:sqlite with the migrations applied, answering in
// the endpoint's documented shape. It checks the adapter (bound parameters out, array rows back
// into drizzle), not Cloudflare's service itself, which no test here can reach.
import { readdirSync, readFileSync } from "node:fs";
import { DatabaseSync, type SQLInputValue } from "node:sqlite";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { d1RestDatabase } from "../../scripts/deployed-database.ts";
import type { HttpError } from "../../worker/errors.ts";
import { createKey, listKeys, revokeKey } from "../../worker/operator/keys.ts";
import { createLoginLink } from "../../worker/operator/login-links.ts";
import { addMember, listMembers, removeMember } from "../../worker/operator/members.ts";
import { createOrganization } from "../../worker/operator/organizations.ts";

const ENDPOINT = "https://api.cloudflare.test/client/v4/accounts/acct/d1/database/db-id/raw";
const TOKEN = "test-token";

let sqlite: DatabaseSync;
const requests: { sql: string; params: unknown[] }[] = [];

/** The raw endpoint: runs one statement with its parameters; rows come back as arrays of values. */
function rawEndpoint(body: { sql: string; params: SQLInputValue[] }): Response {
  try {
    const statement = sqlite.prepare(body.sql);
    statement.setReturnArrays(true);
    const columns = statement.columns().map((column) => column.name);
    let rows: unknown[] = [];
    if (columns.length > 0) rows = statement.all(...body.params);
    else statement.run(...body.params);
    return Response.json({ success: true, errors: [], messages: [], result: [{ success: true, meta: {}, results: { columns, rows } }] });
  } catch (error) {
    return Response.json({ success: false, errors: [{ code: 7500, message: (error as Error).message }], messages: [], result: [] }, { status: 400 });
  }
}

beforeEach(() => {
  sqlite = new DatabaseSync(":memory:");
  for (const file of readdirSync("schema/migrations")
    .filter((name) => name.endsWith(".sql"))
    .sort()) {
    sqlite.exec(readFileSync(`schema/migrations/${file}`, "utf8"));
  }
  requests.length = 0;
  vi.stubGlobal("fetch", async (url: string, init: RequestInit) => {
    expect(url).toBe(ENDPOINT);
    expect(new Headers(init.headers).get("Authorization")).toBe(`Bearer ${TOKEN}`);
    const body = JSON.parse(String(init.body));
    requests.push(body);
    return rawEndpoint(body);
  });
});

afterEach(() => {
  vi.unstubAllGlobals();
  sqlite.close();
});

const refusal = (promise: Promise<unknown>) =>
  promise.then(
    () => null,
    (error: HttpError) => ({ status: error.status, message: error.message }),
  );

describe("the deployed database over the D1 REST API", () => {
  it("runs the operator commands with every value a bound parameter", async () => {
    const db = d1RestDatabase(ENDPOINT, TOKEN, "the test database");
    const { id: orgId } = await createOrganization(db, "lab-rest", { plan: "pro", storageCap: 7 });
    expect(sqlite.prepare("SELECT slug, plan, storage_cap, analysis_cap FROM organizations WHERE id = ?").get(orgId)).toEqual({
      slug: "lab-rest",
      plan: "pro",
      storage_cap: 7,
      analysis_cap: null,
    });
    expect(await refusal(createOrganization(db, "lab-rest"))).toEqual({ status: 409, message: "Organization lab-rest already exists" });

    const { id: keyId, key } = await createKey(db, "lab-rest");
    expect(await listKeys(db, "lab-rest")).toEqual([{ id: keyId, prefix: key.slice(0, 12), created_at: expect.any(Number), revoked_at: null }]);
    // Only the key's hash is stored.
    expect(JSON.stringify(sqlite.prepare("SELECT * FROM api_keys").all())).not.toContain(key);
    await revokeKey(db, keyId);
    const [revoked] = await listKeys(db, "lab-rest");
    expect(revoked?.revoked_at).toEqual(expect.any(Number));
    expect(await refusal(revokeKey(db, keyId))).toEqual({ status: 404, message: `Key with id ${keyId} not found` });

    await addMember(db, "lab-rest", "Ada@Lab.example");
    await addMember(db, "lab-rest", "ada@lab.example");
    expect(await listMembers(db, "lab-rest")).toEqual([{ email: "ada@lab.example", created_at: expect.any(Number) }]);
    // A quote is a value like any other: it removes nobody.
    expect(await refusal(removeMember(db, "lab-rest", "x' OR '1'='1"))).toEqual({ status: 404, message: "x' OR '1'='1 is not a member of lab-rest" });
    await removeMember(db, "lab-rest", "ADA@lab.example");
    expect(await listMembers(db, "lab-rest")).toEqual([]);

    const link = new URL(await createLoginLink(db, "lab-rest", "https://cellseg.example"));
    expect(link.pathname).toBe("/dashboard/login");
    const token = link.searchParams.get("token")!;
    expect(JSON.stringify(sqlite.prepare("SELECT * FROM dashboard_login_links").all())).not.toContain(token);

    for (const { sql } of requests) {
      expect(sql).not.toMatch(/lab-rest|ada@lab|OR '1'/);
    }
    expect(requests.some(({ params }) => params.includes("lab-rest"))).toBe(true);
  });

  it("answers a slug no organization has with 404, and bad input with 422 before any request", async () => {
    const db = d1RestDatabase(ENDPOINT, TOKEN, "the test database");
    expect(await refusal(createKey(db, "nobody"))).toEqual({ status: 404, message: "No organization with slug nobody" });
    const before = requests.length;
    expect((await refusal(createOrganization(db, "Not A Slug")))?.status).toBe(422);
    expect((await refusal(addMember(db, "nobody", "not-an-address")))?.status).toBe(422);
    expect(requests.length).toBe(before);
  });

  it("passes the API's own error on (drizzle names the failed query and keeps it as the cause)", async () => {
    const db = d1RestDatabase(ENDPOINT, TOKEN, "the test database");
    sqlite.exec("DROP TABLE dashboard_login_links");
    await createOrganization(db, "lab-broken");
    await expect(createLoginLink(db, "lab-broken", "https://cellseg.example")).rejects.toMatchObject({
      cause: { message: expect.stringMatching(/answered 400 for the test database: 7500: no such table/) },
    });
  });
});
