// The operator API: the admin CLI's way into a running local stack. Only the local operator
// secret opens it; organization keys and runner tokens never do; without a secret it does not exist.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { app } from "../../worker/app.ts";
import { BASE, call, createOrg, json, RUNNER_TOKEN } from "./helpers.ts";

const SECRET = "operator-secret-for-tests";
const operator = (path: string, init: { method?: string; json?: unknown; key?: string } = {}) =>
  call(`/operator${path}`, { key: init.key ?? SECRET, method: init.method ?? (init.json !== undefined ? "POST" : "GET"), json: init.json });

describe("the operator API", () => {
  it("creates organizations and keys that work at once, lists and revokes them", async () => {
    const created = await operator("/orgs", { json: { slug: "lab-op-1", plan: "pro", storage_cap: 5 } });
    expect(created.status).toBe(201);
    expect(await json(created)).toMatchObject({ slug: "lab-op-1", id: expect.any(String) });
    const duplicate = await operator("/orgs", { json: { slug: "lab-op-1" } });
    expect(duplicate.status).toBe(409);
    expect(await json(duplicate)).toEqual({ detail: "Organization lab-op-1 already exists" });

    const key = await json<{ id: string; key: string }>(await operator("/orgs/lab-op-1/keys", { method: "POST" }));
    expect(key.key).toMatch(/^csk_[0-9a-f]{64}$/);
    expect((await call("/images", { key: key.key })).status).toBe(200);

    const listed = await json<{ items: { id: string; prefix: string; revoked_at: number | null }[] }>(await operator("/orgs/lab-op-1/keys"));
    expect(listed.items).toEqual([expect.objectContaining({ id: key.id, prefix: key.key.slice(0, 12), revoked_at: null })]);
    expect(await json(await operator(`/keys/${key.id}/revoke`, { method: "POST" }))).toEqual({ id: key.id, revoked: true });
    expect((await call("/images", { key: key.key })).status).toBe(401);
    expect((await operator(`/keys/${key.id}/revoke`, { method: "POST" })).status).toBe(404);
  });

  it("answers bad input with the admin CLI's own reasons", async () => {
    expect(await json(await operator("/orgs/no-such-org/keys", { method: "POST" }))).toEqual({ detail: "No organization with slug no-such-org" });
    const badSlug = await operator("/orgs", { json: { slug: "Not A Slug" } });
    expect(badSlug.status).toBe(422);
    expect((await json(badSlug)).detail).toMatch(/organization slug must be/);
  });

  it("refuses organization keys and runner tokens (403), anything else (401)", async () => {
    const org = await createOrg();
    expect((await operator("/orgs", { json: { slug: "lab-op-2" }, key: org.key })).status).toBe(403);
    expect((await operator("/orgs", { json: { slug: "lab-op-2" }, key: RUNNER_TOKEN })).status).toBe(403);
    expect((await operator("/orgs", { json: { slug: "lab-op-2" }, key: `${SECRET}x` })).status).toBe(401);
    expect((await call("/operator/orgs", { json: { slug: "lab-op-2" } })).status).toBe(401);
    // And the secret opens nothing else.
    expect((await call("/images", { key: SECRET })).status).toBe(401);
    expect((await call("/internal/jobs/lease", { key: SECRET, json: { runner_id: "x" } })).status).toBe(401);
  });

  it("does not exist where no operator secret is set (deployed environments)", async () => {
    const request = new Request(`${BASE}/operator/orgs`, {
      method: "POST",
      headers: { Authorization: `Bearer ${SECRET}`, "Content-Type": "application/json" },
      body: "{}",
    });
    const response = await app.fetch(request, { ...env, OPERATOR_SECRET: undefined });
    expect(response.status).toBe(404);
  });

  it("puts a committed public model's files where its row points, and no other model's", async () => {
    for (const id of ["cpsam"]) {
      const response = await call(`/operator/models/${id}/model.json`, { key: SECRET, method: "PUT", body: new TextEncoder().encode(`{"name":"${id}"}`) });
      expect(response.status).toBe(201);
      const { key } = await json<{ key: string }>(response);
      expect(key).toMatch(new RegExp(`^models/${id}/[^/]+/model\\.json$`));
      expect(await (await env.BUCKET.get(key))!.text()).toBe(`{"name":"${id}"}`);
    }
    expect((await call("/operator/models/cpsam/evil.bin", { key: SECRET, method: "PUT", body: new Uint8Array(1) })).status).toBe(422);
    expect((await call("/operator/models/nobody/model.json", { key: SECRET, method: "PUT", body: new Uint8Array(1) })).status).toBe(404);
  });
});
