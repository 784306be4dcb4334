import type { Context } from "hono";

/** Messages on the GPU jobs queue and the conversions queue: a wake-up naming the job row. */
export interface JobMessage {
  job_id: string;
}

/** A runner's reach (services/runner-scopes.ts): null for the fleet (every organization), else the organizations' ids. */
export interface RunnerScope {
  tokenHash: string;
  orgIds: string[] | null;
}

export interface Bindings {
  DB: D1Database;
  BUCKET: R2Bucket;
  CONVERSIONS: Queue<JobMessage>;
  GPU_JOBS: Queue<JobMessage>;

  SIGNED_URL_MODE: "worker" | "r2";
  JOB_QUEUE_MODE: "local" | "cloudflare";
  LEASE_SECONDS: string;
  /** Optional: how old a SUBMITTED job's wake-up may get before it is sent again (default 600). */
  WAKE_UP_RESEND_SECONDS?: string;
  JOB_MAX_ATTEMPTS: string;
  /** Optional: every job's time limit is multiplied by this (default 1). */
  TIME_LIMIT_SCALE?: string;
  MAX_UPLOAD_BYTES: string;
  /** How people sign in to the dashboard: "link" (one-time links from `npm run admin -- login-link`) or "access" (Cloudflare Access). */
  DASHBOARD_SIGN_IN: "link" | "access";
  /** DASHBOARD_SIGN_IN = "access": the team domain (`myteam.cloudflareaccess.com`) and the Access application's AUD tag. */
  ACCESS_TEAM_DOMAIN?: string;
  ACCESS_AUD?: string;

  /** Secrets (wrangler secret / .dev.vars). */
  SIGNING_KEY: string;
  /** Comma-separated runner tokens; several so they can be rotated one at a time. */
  RUNNER_TOKENS: string;
  /** Local only (`npm start` writes it to .dev.vars): the admin CLI's credential for /operator. Never set deployed. */
  OPERATOR_SECRET?: string;
  /** SIGNED_URL_MODE = "r2": S3 credentials and addressing for presigned part URLs. */
  R2_ACCOUNT_ID?: string;
  R2_BUCKET_NAME?: string;
  R2_ACCESS_KEY_ID?: string;
  R2_SECRET_ACCESS_KEY?: string;
  /** JOB_QUEUE_MODE = "cloudflare": the Queues HTTP pull API. */
  CF_ACCOUNT_ID?: string;
  CF_QUEUES_API_TOKEN?: string;
  GPU_QUEUE_ID?: string;
}

export interface Organization {
  id: string;
  slug: string;
  plan: "free" | "pro" | "enterprise";
  storageCap: number;
  analysisCap: number;
}

interface Variables {
  org: Organization;
  /** Dashboard requests: the signed-in session and its CSRF token. */
  dashboard: { sessionId: string; email: string | null; csrfToken: string };
  runner: RunnerScope;
}

export type AppEnv = { Bindings: Bindings; Variables: Variables };
export type AppContext = Context<AppEnv>;
