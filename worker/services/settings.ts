import { jobTimeLimitSeconds, type TimedWork } from "../../schema/work-limits.ts";
import type { Bindings } from "../env.ts";

function positiveInt(value: string | undefined, fallback: number): number {
  const n = Number(value);
  return Number.isFinite(n) && n > 0 ? Math.floor(n) : fallback;
}

function positiveNumber(value: string | undefined, fallback: number): number {
  const n = Number(value);
  return Number.isFinite(n) && n > 0 ? n : fallback;
}

export function settings(env: Bindings) {
  return {
    leaseSeconds: positiveInt(env.LEASE_SECONDS, 120),
    maxAttempts: positiveInt(env.JOB_MAX_ATTEMPTS, 3),
    /** A SUBMITTED job whose wake-up is this old is sent another (the first may have been lost). */
    wakeUpResendSeconds: positiveInt(env.WAKE_UP_RESEND_SECONDS, 600),
    maxUploadBytes: positiveInt(env.MAX_UPLOAD_BYTES, 5 * 1024 ** 3),
    /**
     * Every job's time limit (schema/work-limits.ts) is multiplied by this: operators of slower
     * runners raise it; the tests lower it to see a limit fire in seconds.
     */
    timeLimitScale: positiveNumber(env.TIME_LIMIT_SCALE, 1),
    /** Signed URLs expire after this many seconds. */
    signedUrlSeconds: 15 * 60,
  };
}

/** A job's time limit on this deployment: its work's (schema/work-limits.ts) times TIME_LIMIT_SCALE. */
export function timeLimitSeconds(env: Bindings, work: TimedWork): number {
  return Math.max(1, Math.ceil(jobTimeLimitSeconds(work) * settings(env).timeLimitScale));
}
