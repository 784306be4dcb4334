// Where the admin CLI's commands run. Deployed environments, and local state no stack is running
// on: the admin SQL through `wrangler d1 execute`. A running local stack: its worker's operator API,
// so the worker stays the only process that opens the local SQLite file.
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
} from "./admin-sql.ts";
import { readFileSync } from "node:fs";
import { publicModelFiles, uploadPublicModel } from "./public-models.ts";
import type { RunningStack } from "./running-stack.ts";
import { d1, type Target } from "./wrangler.ts";
import { MODEL_FILES } from "../schema/storage-keys.ts";

export interface KeyRow {
  id: string;
  prefix: string;
  created_at: number;
  revoked_at: number | null;
}

export interface MemberRow {
  email: string;
  created_at: number;
}

export interface AdminBackend {
  /** Where the commands act, for the CLI's messages. */
  readonly where: string;
  createOrganization(slug: string, options: OrgOptions): Promise<{ id: string }>;
  createKey(slug: string): Promise<{ id: string; key: string }>;
  listKeys(slug: string): Promise<KeyRow[]>;
  revokeKey(keyId: string): Promise<void>;
  /** Lets a person (by email) into the organization's dashboard; adding twice is harmless. */
  addMember(slug: string, email: string): Promise<void>;
  removeMember(slug: string, email: string): Promise<void>;
  listMembers(slug: string): Promise<MemberRow[]>;
  /** A one-time dashboard sign-in URL on `baseUrl` (15 minutes, single use). */
  createLoginLink(slug: string, baseUrl: string): Promise<string>;
  /** Puts the committed public model's files (scripts/public-models.ts) where its row points; false when its weights are not committed. */
  uploadPublicModel(id: string): Promise<boolean>;
}

export function wranglerBackend(target: Target): AdminBackend {
  return {
    where: target.env ? `the ${target.env} database` : "the local database",
    async createOrganization(slug, options) {
      const id = crypto.randomUUID();
      if (d1(target, createOrganizationSql(id, slug, options)).length === 0) throw new AdminInputError(`organization ${slug} already exists`);
      return { id };
    },
    async createKey(slug) {
      const { id, key, sql } = await createKeySql(slug);
      d1(target, sql);
      if (d1(target, `SELECT id FROM api_keys WHERE id = '${id}'`).length === 0) throw new AdminInputError(`no organization with slug ${slug}`);
      return { id, key };
    },
    async listKeys(slug) {
      return d1(target, listKeysSql(slug)) as unknown as KeyRow[];
    },
    async revokeKey(keyId) {
      if (d1(target, revokeKeySql(keyId)).length === 0) throw new AdminInputError(`no active key with id ${keyId}`);
    },
    async addMember(slug, email) {
      d1(target, addMemberSql(slug, email));
      if (!d1(target, listMembersSql(slug)).some((row) => row.email === email.toLowerCase())) throw new AdminInputError(`no organization with slug ${slug}`);
    },
    async removeMember(slug, email) {
      if (d1(target, removeMemberSql(slug, email)).length === 0) throw new AdminInputError(`${email} is not a member of ${slug}`);
    },
    async listMembers(slug) {
      return d1(target, listMembersSql(slug)) as unknown as MemberRow[];
    },
    async createLoginLink(slug, baseUrl) {
      const { url, tokenHash, sql } = await loginLinkSql(slug, baseUrl);
      d1(target, sql);
      if (d1(target, `SELECT token_hash FROM dashboard_login_links WHERE token_hash = '${tokenHash}'`).length === 0)
        throw new AdminInputError(`no organization with slug ${slug}`);
      return url;
    },
    async uploadPublicModel(id) {
      return uploadPublicModel(target, id);
    },
  };
}

const OPERATOR_TIMEOUT_MS = 30_000;
/** A stack announces itself before its worker listens: wait this long for it to start. */
const WORKER_START_MS = 90_000;

/** fetch, waiting while nothing listens yet (the announced worker is still starting). */
async function fetchStartingWorker(url: string, init: RequestInit): Promise<Response> {
  const deadline = Date.now() + WORKER_START_MS;
  for (;;) {
    try {
      return await fetch(url, { ...init, signal: AbortSignal.timeout(OPERATOR_TIMEOUT_MS) });
    } catch (error) {
      const refused = (error as { cause?: { code?: string } }).cause?.code === "ECONNREFUSED";
      if (!refused || Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

export function operatorBackend(stack: RunningStack): AdminBackend {
  async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const bytes = body instanceof Uint8Array;
    const response = await fetchStartingWorker(`${stack.url}/api/v1/operator${path}`, {
      method,
      headers: {
        Authorization: `Bearer ${stack.secret}`,
        ...(body !== undefined && { "Content-Type": bytes ? "application/octet-stream" : "application/json" }),
      },
      body: body === undefined ? undefined : bytes ? body : JSON.stringify(body),
    });
    const text = await response.text();
    const parsed = text ? (JSON.parse(text) as Record<string, unknown>) : {};
    if (response.ok) return parsed as T;
    const detail = typeof parsed.detail === "string" ? parsed.detail : JSON.stringify(parsed.detail ?? text);
    if (response.status < 500) throw new AdminInputError(detail);
    throw new Error(`the running worker at ${stack.url} answered ${response.status}: ${detail}`);
  }
  return {
    where: `the running local stack at ${stack.url}`,
    createOrganization: (slug, options) =>
      call("POST", "/orgs", { slug, plan: options.plan, storage_cap: options.storageCap ?? undefined, analysis_cap: options.analysisCap ?? undefined }),
    createKey: (slug) => call("POST", `/orgs/${encodeURIComponent(slug)}/keys`),
    listKeys: async (slug) => (await call<{ items: KeyRow[] }>("GET", `/orgs/${encodeURIComponent(slug)}/keys`)).items,
    revokeKey: async (keyId) => {
      await call("POST", `/keys/${encodeURIComponent(keyId)}/revoke`);
    },
    addMember: async (slug, email) => {
      await call("POST", `/orgs/${encodeURIComponent(slug)}/members`, { email });
    },
    removeMember: async (slug, email) => {
      await call("DELETE", `/orgs/${encodeURIComponent(slug)}/members/${encodeURIComponent(email)}`);
    },
    listMembers: async (slug) => (await call<{ items: MemberRow[] }>("GET", `/orgs/${encodeURIComponent(slug)}/members`)).items,
    createLoginLink: async (slug, baseUrl) => (await call<{ url: string }>("POST", `/orgs/${encodeURIComponent(slug)}/login-links`, { base_url: baseUrl })).url,
    uploadPublicModel: async (id) => {
      const files = publicModelFiles(id);
      if (!files) return false;
      const path = `/models/${encodeURIComponent(id)}`;
      await call("PUT", `${path}/${MODEL_FILES.onnx}`, new Uint8Array(readFileSync(files.onnx)));
      await call("PUT", `${path}/${MODEL_FILES.manifest}`, new Uint8Array(readFileSync(files.manifest)));
      return true;
    },
  };
}
