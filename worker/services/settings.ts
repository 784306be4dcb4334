import type { Bindings } from "../env.ts";

function positiveInt(value: string | undefined, fallback: number): number {
  const n = Number(value);
  return Number.isFinite(n) && n > 0 ? Math.floor(n) : fallback;
}

export function settings(env: Bindings) {
  return {
    leaseSeconds: positiveInt(env.LEASE_SECONDS, 120),
    maxAttempts: positiveInt(env.JOB_MAX_ATTEMPTS, 3),
    maxUploadBytes: positiveInt(env.MAX_UPLOAD_BYTES, 5 * 1024 ** 3),
    /** Signed URLs expire after this many seconds. */
    signedUrlSeconds: 15 * 60,
  };
}
