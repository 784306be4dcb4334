// One-time sign-in links and session tokens: random, and stored only as a SHA-256. Shared by the
// worker and `npm run admin -- login-link`.
import { randomToken, sha256Hex } from "./crypto.ts";

export const LOGIN_LINK_TTL_MS = 15 * 60 * 1000;
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;
export const LOGIN_PATH = "/dashboard/login";

export async function newSecretToken(): Promise<{ token: string; tokenHash: string }> {
  const token = randomToken(32);
  return { token, tokenHash: await sha256Hex(token) };
}
