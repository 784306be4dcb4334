import type { Bindings } from "../env.ts";

function positiveInt(value: string | undefined, fallback: number): number {
  const n = Number(value);
  return Number.isFinite(n) && n > 0 ? Math.floor(n) : fallback;
}

export function settings(env: Bindings) {
  return {
    leaseSeconds: positiveInt(env.LEASE_SECONDS, 120),
    maxAttempts: positiveInt(env.JOB_MAX_ATTEMPTS, 3),
    /** A SUBMITTED job whose wake-up is this old is sent another (the first may have been lost). */
    wakeUpResendSeconds: positiveInt(env.WAKE_UP_RESEND_SECONDS, 600),
    maxUploadBytes: positiveInt(env.MAX_UPLOAD_BYTES, 5 * 1024 ** 3),
    /** Signed URLs expire after this many seconds. */
    signedUrlSeconds: 15 * 60,
  };
}
