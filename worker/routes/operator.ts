// The operator API (/api/v1/operator, the local operator secret only): the admin CLI's commands
// against a running local stack. Answers carry the same data the CLI prints.
import { Hono } from "hono";
import { z } from "zod";
import { PLANS } from "../../schema/db.ts";
import type { AppEnv } from "../env.ts";
import { createKey, listKeys, revokeKey } from "../operator/keys.ts";
import { createLoginLink } from "../operator/login-links.ts";
import { addMember, listMembers, removeMember } from "../operator/members.ts";
import { createOrganization } from "../operator/organizations.ts";
import { putPublicModelFile } from "../operator/public-model-files.ts";
import { createRunnerToken, revokeRunnerToken } from "../operator/runner-tokens.ts";
import { database } from "../storage/database.ts";
import { validate } from "../validation.ts";
import { MODEL_FILE_NAMES } from "../../schema/storage-keys.ts";

export const operator = new Hono<AppEnv>();

const cap = z.number().int().min(0).optional();
const orgBody = z.object({ slug: z.string().min(1).max(63), plan: z.enum(PLANS).optional(), storage_cap: cap, analysis_cap: cap });
const slugParam = z.object({ slug: z.string().min(1).max(63) });
const keyParam = z.object({ id: z.string().min(1).max(64) });

operator.post("/orgs", validate("json", orgBody), async (c) => {
  const body = c.req.valid("json");
  return c.json(
    await createOrganization(database(c.env.DB), body.slug, { plan: body.plan, storageCap: body.storage_cap, analysisCap: body.analysis_cap }),
    201,
  );
});

operator.post("/orgs/:slug/keys", validate("param", slugParam), async (c) => c.json(await createKey(database(c.env.DB), c.req.valid("param").slug), 201));

operator.get("/orgs/:slug/keys", validate("param", slugParam), async (c) => c.json({ items: await listKeys(database(c.env.DB), c.req.valid("param").slug) }));

operator.post("/keys/:id/revoke", validate("param", keyParam), async (c) => {
  await revokeKey(database(c.env.DB), c.req.valid("param").id);
  return c.json({ id: c.req.valid("param").id, revoked: true });
});

operator.post("/runner-tokens", validate("json", z.object({ slugs: z.array(z.string().min(1).max(63)).min(1).max(100) })), async (c) =>
  c.json(await createRunnerToken(database(c.env.DB), c.req.valid("json").slugs), 201),
);

operator.post("/runner-tokens/:id/revoke", validate("param", keyParam), async (c) => {
  await revokeRunnerToken(database(c.env.DB), c.req.valid("param").id);
  return c.json({ id: c.req.valid("param").id, revoked: true });
});

const memberParam = z.object({ slug: z.string().min(1).max(63), email: z.string().min(3).max(320) });

operator.post("/orgs/:slug/members", validate("param", slugParam), validate("json", z.object({ email: z.string().min(3).max(320) })), async (c) => {
  await addMember(database(c.env.DB), c.req.valid("param").slug, c.req.valid("json").email);
  return c.json({ email: c.req.valid("json").email.toLowerCase() }, 201);
});

operator.get("/orgs/:slug/members", validate("param", slugParam), async (c) =>
  c.json({ items: await listMembers(database(c.env.DB), c.req.valid("param").slug) }),
);

operator.delete("/orgs/:slug/members/:email", validate("param", memberParam), async (c) => {
  const { slug, email } = c.req.valid("param");
  await removeMember(database(c.env.DB), slug, email);
  return c.body(null, 204);
});

operator.post("/orgs/:slug/login-links", validate("param", slugParam), validate("json", z.object({ base_url: z.url() })), async (c) => {
  return c.json({ url: await createLoginLink(database(c.env.DB), c.req.valid("param").slug, c.req.valid("json").base_url) }, 201);
});

operator.put("/models/:id/:file", validate("param", z.object({ id: z.string().min(1).max(100), file: z.enum(MODEL_FILE_NAMES) })), async (c) => {
  const { id, file } = c.req.valid("param");
  const key = await putPublicModelFile(c.env, id, file, await c.req.arrayBuffer());
  return c.json({ key }, 201);
});
