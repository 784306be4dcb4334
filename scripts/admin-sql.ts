// The SQL behind `npm run admin`: organizations and API keys. It runs through
// `wrangler d1 execute` (local or deployed), which takes SQL text, so every value is validated
// and quoted here. Tests run the same statements against workerd's D1.
import { PLANS, type Plan } from "../schema/db.ts";
import { newApiKey } from "../worker/services/api-key-format.ts";
import { LOGIN_LINK_TTL_MS, LOGIN_PATH, newSecretToken } from "../worker/services/sign-in-tokens.ts";

const SLUG = /^[a-z0-9][a-z0-9-]{1,62}$/;

export class AdminInputError extends Error {}

function quote(value: string | number | null): string {
  if (value === null) return "NULL";
  if (typeof value === "number") {
    if (!Number.isSafeInteger(value)) throw new AdminInputError(`not an integer: ${value}`);
    return String(value);
  }
  return `'${value.replaceAll("'", "''")}'`;
}

export function checkSlug(slug: string): string {
  if (!SLUG.test(slug))
    throw new AdminInputError(`organization slug must be 2-63 of a-z, 0-9 and '-', starting with a letter or digit: ${JSON.stringify(slug)}`);
  return slug;
}

export interface OrgOptions {
  plan?: Plan;
  storageCap?: number | null;
  analysisCap?: number | null;
}

export function createOrganizationSql(id: string, slug: string, options: OrgOptions = {}): string {
  const plan = options.plan ?? "free";
  if (!PLANS.includes(plan)) throw new AdminInputError(`plan must be one of ${PLANS.join(", ")}`);
  for (const cap of [options.storageCap, options.analysisCap]) {
    if (cap !== undefined && cap !== null && (!Number.isSafeInteger(cap) || cap < 0)) throw new AdminInputError(`caps must be whole numbers >= 0, got ${cap}`);
  }
  // A slug that exists already inserts nothing and returns no row, so callers can say so.
  return `INSERT INTO organizations (id, slug, plan, storage_cap, analysis_cap, created_at) VALUES (${quote(id)}, ${quote(checkSlug(slug))}, ${quote(plan)}, ${quote(options.storageCap ?? null)}, ${quote(options.analysisCap ?? null)}, ${Date.now()}) ON CONFLICT (slug) DO NOTHING RETURNING id;`;
}

/** A new API key: the key itself (shown once) and the SQL that stores only its hash. */
export async function createKeySql(orgSlug: string): Promise<{ id: string; key: string; sql: string }> {
  const { key, keyHash, prefix } = await newApiKey();
  const id = crypto.randomUUID();
  const sql = `INSERT INTO api_keys (id, org_id, key_hash, prefix, created_at) SELECT ${quote(id)}, id, ${quote(keyHash)}, ${quote(prefix)}, ${Date.now()} FROM organizations WHERE slug = ${quote(checkSlug(orgSlug))};`;
  return { id, key, sql };
}

export function listKeysSql(orgSlug: string): string {
  return `SELECT k.id, k.prefix, k.created_at, k.revoked_at FROM api_keys k JOIN organizations o ON o.id = k.org_id WHERE o.slug = ${quote(checkSlug(orgSlug))} ORDER BY k.created_at;`;
}

export function revokeKeySql(keyId: string): string {
  if (!/^[0-9a-f-]{36}$/.test(keyId)) throw new AdminInputError(`not a key id: ${JSON.stringify(keyId)}`);
  return `UPDATE api_keys SET revoked_at = ${Date.now()} WHERE id = ${quote(keyId)} AND revoked_at IS NULL RETURNING id;`;
}

const EMAIL = /^[^\s@'"]+@[^\s@'"]+\.[^\s@'"]+$/;

/** Adds a dashboard member (Cloudflare Access signs them in by this email); adding twice is harmless. */
export function addMemberSql(orgSlug: string, email: string): string {
  if (!EMAIL.test(email)) throw new AdminInputError(`not an email address: ${JSON.stringify(email)}`);
  return `INSERT INTO organization_members (id, org_id, email, created_at) SELECT ${quote(crypto.randomUUID())}, id, ${quote(email.toLowerCase())}, ${Date.now()} FROM organizations WHERE slug = ${quote(checkSlug(orgSlug))} ON CONFLICT DO NOTHING;`;
}

export function listMembersSql(orgSlug: string): string {
  return `SELECT m.email, m.created_at FROM organization_members m JOIN organizations o ON o.id = m.org_id WHERE o.slug = ${quote(checkSlug(orgSlug))} ORDER BY m.email;`;
}

export function removeMemberSql(orgSlug: string, email: string): string {
  return `DELETE FROM organization_members WHERE email = ${quote(email.toLowerCase())} AND org_id = (SELECT id FROM organizations WHERE slug = ${quote(checkSlug(orgSlug))}) RETURNING email;`;
}

/** A one-time dashboard sign-in link (15 minutes, single use): the URL and the SQL storing only the token's hash. */
export async function loginLinkSql(orgSlug: string, baseUrl: string): Promise<{ url: string; tokenHash: string; sql: string }> {
  const { token, tokenHash } = await newSecretToken();
  const now = Date.now();
  const url = new URL(LOGIN_PATH, baseUrl);
  url.searchParams.set("token", token);
  const sql = `INSERT INTO dashboard_login_links (token_hash, org_id, expires_at, created_at) SELECT ${quote(tokenHash)}, id, ${now + LOGIN_LINK_TTL_MS}, ${now} FROM organizations WHERE slug = ${quote(checkSlug(orgSlug))};`;
  return { url: url.toString(), tokenHash, sql };
}
