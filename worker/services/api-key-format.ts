// What an API key (and a scoped runner token) looks like and what is stored of it; shared by the dashboard and `npm run admin`.
import { sha256Hex } from "./crypto.ts";

/** How many leading characters of a key are kept, so a person can tell keys apart. */
const VISIBLE_PREFIX = 12;

export async function newApiKey(): Promise<{ key: string; keyHash: string; prefix: string }> {
  const raw = crypto.getRandomValues(new Uint8Array(32));
  const key = `csk_${[...raw].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
  return { key, keyHash: await sha256Hex(key), prefix: key.slice(0, VISIBLE_PREFIX) };
}

/** The prefix of a scoped runner token (runner-scopes.ts), so a person (and a secret scanner) can tell one from an API key. */
export const SCOPED_RUNNER_TOKEN_PREFIX = "csr_";

export async function newScopedRunnerToken(): Promise<{ token: string; tokenHash: string; prefix: string }> {
  const raw = crypto.getRandomValues(new Uint8Array(32));
  const token = `${SCOPED_RUNNER_TOKEN_PREFIX}${[...raw].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
  return { token, tokenHash: await sha256Hex(token), prefix: token.slice(0, VISIBLE_PREFIX) };
}
