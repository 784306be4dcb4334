// What an API key looks like and what is stored of it; shared by the dashboard and `npm run admin`.
import { sha256Hex } from "./crypto.ts";

/** How many leading characters of a key are kept, so a person can tell keys apart. */
const VISIBLE_PREFIX = 12;

export async function newApiKey(): Promise<{ key: string; keyHash: string; prefix: string }> {
  const raw = crypto.getRandomValues(new Uint8Array(32));
  const key = `csk_${[...raw].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
  return { key, keyHash: await sha256Hex(key), prefix: key.slice(0, VISIBLE_PREFIX) };
}
