// Verifies the JWT Cloudflare Access puts in `Cf-Access-Jwt-Assertion` on every request it lets
// through: RS256 signature against the team's published keys (JWKS, fetched and cached for a few
// minutes), audience (the Access application's AUD tag), issuer, and expiry. The method follows
// Cloudflare's "Validate JWTs" guide; the code is plain WebCrypto. When the keys cannot be fetched
// no token can be judged: that is AccessKeysUnavailableError (a 503), not a refused sign-in.

interface AccessConfig {
  /** The team's domain, e.g. `myteam.cloudflareaccess.com`. */
  teamDomain: string;
  /** The Access application's AUD tag. */
  audience: string;
}

export class AccessJwtError extends Error {}

/**
 * The team's keys could not be had (Access's certs endpoint failed, timed out or answered something
 * that is not a key set): no token can be judged, which is the service's trouble, not the person's.
 */
export class AccessKeysUnavailableError extends Error {
  readonly retryAfterSeconds: number;
  constructor(message: string, retryAfterSeconds: number) {
    super(message);
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

interface Jwk extends JsonWebKey {
  kid?: string;
}
type JwksFetcher = (url: string) => Promise<{ keys: Jwk[] }>;

/** A certs request that has not answered in this long has failed: a dashboard request must not hang on it. */
const FETCH_TIMEOUT_MS = 5_000;

const defaultFetcher: JwksFetcher = async (url) => {
  const response = await fetch(url, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
  if (!response.ok) throw new Error(`${url} answered ${response.status}`);
  return response.json();
};

// Exported for its test only (test/worker/dashboard-access.test.ts).
/**
 * Keys are trusted this long after they are fetched, so a key Access withdraws stops being
 * accepted within minutes; a token naming an unknown key refreshes sooner, at most this often.
 */
export const JWKS_TTL_MS = 5 * 60 * 1000;
const UNKNOWN_KID_REFRESH_MS = 30 * 1000;
// Exported for its test only (test/worker/dashboard-access.test.ts).
/** After a failed fetch, requests are answered 503 for this long without asking Access again (and told to retry then). */
export const JWKS_FAILURE_BACKOFF_MS = 10 * 1000;
/** Clock difference tolerated between Access and this worker. */
const SKEW_SECONDS = 30;

const jwksCache = new Map<string, { keys: Map<string, CryptoKey>; fetchedAt: number }>();
const jwksFailures = new Map<string, number>();

export function teamOrigin(teamDomain: string): string {
  return `https://${teamDomain.replace(/^https?:\/\//, "").replace(/\/+$/, "")}`;
}

async function importKeys(jwks: { keys: Jwk[] }): Promise<Map<string, CryptoKey>> {
  if (!Array.isArray(jwks?.keys)) throw new Error("the answer is not a JSON Web Key Set");
  const keys = new Map<string, CryptoKey>();
  for (const jwk of jwks.keys) {
    if (jwk.kty !== "RSA" || !jwk.kid) continue;
    const { kid, ...material } = jwk;
    keys.set(
      kid,
      await crypto.subtle.importKey("jwk", { ...material, alg: "RS256", ext: true }, { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" }, false, ["verify"]),
    );
  }
  return keys;
}

async function signingKey(config: AccessConfig, kid: string, fetcher: JwksFetcher, now: number): Promise<CryptoKey | undefined> {
  const url = `${teamOrigin(config.teamDomain)}/cdn-cgi/access/certs`;
  const cached = jwksCache.get(url);
  const age = cached ? now - cached.fetchedAt : Infinity;
  if (cached && age < JWKS_TTL_MS && (cached.keys.has(kid) || age < UNKNOWN_KID_REFRESH_MS)) return cached.keys.get(kid);
  const failedAt = jwksFailures.get(url);
  if (failedAt !== undefined && now - failedAt < JWKS_FAILURE_BACKOFF_MS) {
    throw new AccessKeysUnavailableError(
      `Cloudflare Access's keys could not be fetched from ${url}`,
      Math.ceil((failedAt + JWKS_FAILURE_BACKOFF_MS - now) / 1000),
    );
  }
  let keys: Map<string, CryptoKey>;
  try {
    keys = await importKeys(await fetcher(url));
  } catch (error) {
    jwksFailures.set(url, now);
    console.error("fetching Cloudflare Access keys failed", url, error);
    throw new AccessKeysUnavailableError(`Cloudflare Access's keys could not be fetched from ${url}`, Math.ceil(JWKS_FAILURE_BACKOFF_MS / 1000));
  }
  jwksFailures.delete(url);
  jwksCache.set(url, { keys, fetchedAt: now });
  return keys.get(kid);
}

function base64UrlBytes(part: string): Uint8Array<ArrayBuffer> {
  const b64 = part.replaceAll("-", "+").replaceAll("_", "/") + "=".repeat((4 - (part.length % 4)) % 4);
  const text = atob(b64);
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  return bytes;
}

function jsonPart(part: string): Record<string, unknown> {
  try {
    return JSON.parse(new TextDecoder().decode(base64UrlBytes(part)));
  } catch {
    throw new AccessJwtError("malformed token");
  }
}

/** Who Access let through, and when Access signed them in (the token's `iat`, in ms). */
export interface AccessIdentity {
  email: string;
  issuedAt: number;
}

/** The verified identity of the person Access let through; throws AccessJwtError otherwise. */
export async function verifyAccessJwt(token: string, config: AccessConfig, fetcher: JwksFetcher = defaultFetcher, now = Date.now()): Promise<AccessIdentity> {
  const [headerPart, payloadPart, signaturePart, ...rest] = token.split(".");
  if (headerPart === undefined || payloadPart === undefined || signaturePart === undefined || rest.length > 0) throw new AccessJwtError("malformed token");
  const header = jsonPart(headerPart);
  if (header.alg !== "RS256") throw new AccessJwtError(`unexpected algorithm ${String(header.alg)}`);
  const key = await signingKey(config, String(header.kid ?? ""), fetcher, now);
  if (!key) throw new AccessJwtError("signed by a key the team does not publish");
  let signature: Uint8Array<ArrayBuffer>;
  try {
    signature = base64UrlBytes(signaturePart);
  } catch {
    throw new AccessJwtError("malformed signature");
  }
  const signed = new TextEncoder().encode(`${headerPart}.${payloadPart}`);
  if (!(await crypto.subtle.verify("RSASSA-PKCS1-v1_5", key, signature, signed))) throw new AccessJwtError("bad signature");

  const claims = jsonPart(payloadPart);
  const audiences = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  if (!audiences.includes(config.audience)) throw new AccessJwtError("token is for another Access application");
  if (claims.iss !== teamOrigin(config.teamDomain)) throw new AccessJwtError("token is from another team");
  const seconds = now / 1000;
  if (typeof claims.exp !== "number" || claims.exp + SKEW_SECONDS < seconds) throw new AccessJwtError("token expired");
  if (typeof claims.nbf === "number" && claims.nbf - SKEW_SECONDS > seconds) throw new AccessJwtError("token not valid yet");
  if (typeof claims.email !== "string" || !claims.email.includes("@"))
    throw new AccessJwtError("token names no email (service tokens cannot use the dashboard)");
  // A sign-out is for good only against tokens issued before it (services/dashboard-sign-outs.ts).
  if (typeof claims.iat !== "number") throw new AccessJwtError("token has no issue time");
  return { email: claims.email.toLowerCase(), issuedAt: claims.iat * 1000 };
}
