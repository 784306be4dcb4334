// Where the admin CLI's commands run, and the running local stack's way: its worker's operator API,
// so the worker stays the only process that opens the local SQLite file. Local state no stack is
// running on, and deployed environments: scripts/admin-database-backend.ts. Both run the worker's
// own operator functions (worker/operator/), so every path acts the same.
import { readFileSync } from "node:fs";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { MODEL_FILES } from "../schema/storage-keys.ts";
import { HttpError } from "../worker/errors.ts";
import type { KeyListing } from "../worker/operator/keys.ts";
import type { MemberListing } from "../worker/operator/members.ts";
import type { OrgOptions } from "../worker/operator/organizations.ts";
import { publicModelFiles } from "./public-models.ts";
import type { RunningStack } from "./running-stack.ts";

export interface AdminBackend {
  /** Where the commands act, for the CLI's messages. */
  readonly where: string;
  createOrganization(slug: string, options: OrgOptions): Promise<{ id: string }>;
  createKey(slug: string): Promise<{ id: string; key: string }>;
  listKeys(slug: string): Promise<KeyListing[]>;
  revokeKey(keyId: string): Promise<void>;
  /** A runner token that leases only these organizations' jobs (shown once). */
  createRunnerToken(slugs: string[]): Promise<{ id: string; token: string }>;
  revokeRunnerToken(id: string): Promise<void>;
  /** Lets a person (by email) into the organization's dashboard; adding twice is harmless. */
  addMember(slug: string, email: string): Promise<void>;
  removeMember(slug: string, email: string): Promise<void>;
  listMembers(slug: string): Promise<MemberListing[]>;
  /** A one-time dashboard sign-in URL on `baseUrl` (15 minutes, single use). */
  createLoginLink(slug: string, baseUrl: string): Promise<string>;
  /** Puts the committed public model's files (scripts/public-models.ts) where its row points; false when its weights are not committed. */
  uploadPublicModel(id: string): Promise<boolean>;
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

export function operatorBackend(stack: Pick<RunningStack, "url" | "secret">): AdminBackend {
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
    // The worker's own refusal (422, 404, 409): the CLI prints its reason, as for every other path.
    if (response.status < 500) throw new HttpError(response.status as ContentfulStatusCode, detail);
    throw new Error(`the running worker at ${stack.url} answered ${response.status}: ${detail}`);
  }
  return {
    where: `the running local stack at ${stack.url}`,
    createOrganization: (slug, options) =>
      call("POST", "/orgs", { slug, plan: options.plan, storage_cap: options.storageCap ?? undefined, analysis_cap: options.analysisCap ?? undefined }),
    createKey: (slug) => call("POST", `/orgs/${encodeURIComponent(slug)}/keys`),
    listKeys: async (slug) => (await call<{ items: KeyListing[] }>("GET", `/orgs/${encodeURIComponent(slug)}/keys`)).items,
    revokeKey: async (keyId) => {
      await call("POST", `/keys/${encodeURIComponent(keyId)}/revoke`);
    },
    createRunnerToken: (slugs) => call("POST", "/runner-tokens", { slugs }),
    revokeRunnerToken: async (id) => {
      await call("POST", `/runner-tokens/${encodeURIComponent(id)}/revoke`);
    },
    addMember: async (slug, email) => {
      await call("POST", `/orgs/${encodeURIComponent(slug)}/members`, { email });
    },
    removeMember: async (slug, email) => {
      await call("DELETE", `/orgs/${encodeURIComponent(slug)}/members/${encodeURIComponent(email)}`);
    },
    listMembers: async (slug) => (await call<{ items: MemberListing[] }>("GET", `/orgs/${encodeURIComponent(slug)}/members`)).items,
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
