// The SQL behind `npm run admin`: organizations and API keys. It runs through
// `wrangler d1 execute` (local or deployed), which takes SQL text, so every value is validated
// and quoted here. Tests run the same statements against workerd's D1.
import { PLANS, type Plan } from "../schema/db.ts";

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
  if (!SLUG.test(slug)) throw new AdminInputError(`organization slug must be 2-63 of a-z, 0-9 and '-', starting with a letter or digit: ${JSON.stringify(slug)}`);
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
  const raw = crypto.getRandomValues(new Uint8Array(32));
  const key = `csk_${[...raw].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(key)));
  const hash = [...digest].map((b) => b.toString(16).padStart(2, "0")).join("");
  const id = crypto.randomUUID();
  const sql = `INSERT INTO api_keys (id, org_id, key_hash, prefix, created_at) SELECT ${quote(id)}, id, ${quote(hash)}, ${quote(key.slice(0, 12))}, ${Date.now()} FROM organizations WHERE slug = ${quote(checkSlug(orgSlug))};`;
  return { id, key, sql };
}

export function listKeysSql(orgSlug: string): string {
  return `SELECT k.id, k.prefix, k.created_at, k.revoked_at FROM api_keys k JOIN organizations o ON o.id = k.org_id WHERE o.slug = ${quote(checkSlug(orgSlug))} ORDER BY k.created_at;`;
}

export function revokeKeySql(keyId: string): string {
  if (!/^[0-9a-f-]{36}$/.test(keyId)) throw new AdminInputError(`not a key id: ${JSON.stringify(keyId)}`);
  return `UPDATE api_keys SET revoked_at = ${Date.now()} WHERE id = ${quote(keyId)} AND revoked_at IS NULL RETURNING id;`;
}
