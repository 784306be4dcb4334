// What the admin CLI does to a running local stack, done inside the worker so that only one
// process ever opens the local SQLite file (two processes on it answer SQLITE_BUSY). The SQL is the
// admin CLI's own (scripts/admin-sql.ts), so both paths act the same.
import {
  AdminInputError,
  addMemberSql,
  createKeySql,
  createOrganizationSql,
  listKeysSql,
  listMembersSql,
  loginLinkSql,
  type OrgOptions,
  removeMemberSql,
  revokeKeySql,
} from "../../scripts/admin-sql.ts";
import { HttpError, notFound } from "../errors.ts";
import { newId } from "./crypto.ts";
import { getVisibleModel } from "./models.ts";
import type { MODEL_FILE_NAMES } from "../../schema/storage-keys.ts";

/** The admin SQL for these inputs; inputs it refuses are a 422 with its reason. */
async function adminSql<T>(build: () => T | Promise<T>): Promise<T> {
  try {
    return await build();
  } catch (error) {
    if (error instanceof AdminInputError) throw new HttpError(422, error.message);
    throw error;
  }
}

async function rows(d1: D1Database, sql: string): Promise<Record<string, unknown>[]> {
  return (await d1.prepare(sql).all<Record<string, unknown>>()).results;
}

export async function createOrganization(d1: D1Database, slug: string, options: OrgOptions): Promise<{ id: string; slug: string }> {
  const id = newId();
  const [created] = await rows(d1, await adminSql(() => createOrganizationSql(id, slug, options)));
  if (!created) throw new HttpError(409, `Organization ${slug} already exists`);
  return { id, slug };
}

export async function createKey(d1: D1Database, slug: string): Promise<{ id: string; key: string }> {
  const created = await adminSql(() => createKeySql(slug));
  await rows(d1, created.sql);
  const [stored] = await rows(d1, `SELECT id FROM api_keys WHERE id = '${created.id}'`);
  if (!stored) throw new HttpError(404, `No organization with slug ${slug}`);
  return { id: created.id, key: created.key };
}

export async function listKeys(d1: D1Database, slug: string): Promise<Record<string, unknown>[]> {
  return rows(d1, await adminSql(() => listKeysSql(slug)));
}

export async function revokeKey(d1: D1Database, keyId: string): Promise<void> {
  const [revoked] = await rows(d1, await adminSql(() => revokeKeySql(keyId)));
  if (!revoked) throw notFound("Key", keyId);
}

export async function addMember(d1: D1Database, slug: string, email: string): Promise<void> {
  await rows(d1, await adminSql(() => addMemberSql(slug, email)));
  const members = await rows(d1, await adminSql(() => listMembersSql(slug)));
  if (!members.some((row) => row.email === email.toLowerCase())) throw new HttpError(404, `No organization with slug ${slug}`);
}

export async function removeMember(d1: D1Database, slug: string, email: string): Promise<void> {
  const [removed] = await rows(d1, await adminSql(() => removeMemberSql(slug, email)));
  if (!removed) throw new HttpError(404, `${email} is not a member of ${slug}`);
}

export async function listMembers(d1: D1Database, slug: string): Promise<Record<string, unknown>[]> {
  return rows(d1, await adminSql(() => listMembersSql(slug)));
}

export async function createLoginLink(d1: D1Database, slug: string, baseUrl: string): Promise<string> {
  const { url, tokenHash, sql } = await adminSql(() => loginLinkSql(slug, baseUrl));
  await rows(d1, sql);
  const [stored] = await rows(d1, `SELECT token_hash FROM dashboard_login_links WHERE token_hash = '${tokenHash}'`);
  if (!stored) throw new HttpError(404, `No organization with slug ${slug}`);
  return url;
}

/** One file of a committed public model, stored where its database row points. */
export async function putPublicModelFile(
  env: { DB: D1Database; BUCKET: R2Bucket },
  id: string,
  file: (typeof MODEL_FILE_NAMES)[number],
  body: ReadableStream | ArrayBuffer,
): Promise<string> {
  const model = await getVisibleModel(env.DB, "", id);
  // Only a public model's row (no organization's): an organization's own models are its trainings'.
  if (!model || model.orgId !== null) throw new HttpError(404, `No public model ${id}: apply the migrations first`);
  await env.BUCKET.put(model.r2Prefix + file, body);
  return model.r2Prefix + file;
}
