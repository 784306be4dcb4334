// D1 tables, as drizzle schema. `npm run db:generate` turns changes here into a new SQL migration
// under schema/migrations/, which wrangler applies (`wrangler d1 migrations apply`).
import { sql } from "drizzle-orm";
import { index, integer, real, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { PIXEL_SIZE_SOURCES } from "./image-formats/calibration.ts";
import { DIAMETER_SOURCES } from "./diameter-basis.ts";
import { MODALITIES } from "./modality.ts";

const createdAt = () => integer("created_at").notNull().default(sql`(unixepoch('subsec') * 1000)`);

export const PLANS = ["free", "pro", "enterprise"] as const;
export type Plan = (typeof PLANS)[number];

export const organizations = sqliteTable("organizations", {
  id: text("id").primaryKey(),
  slug: text("slug").notNull().unique(),
  plan: text("plan", { enum: PLANS }).notNull().default("free"),
  /** Most image records the organization may hold at once; null means the plan's default. */
  storageCap: integer("storage_cap"),
  /** Most predictions + trainings per calendar month (UTC); null means the plan's default. */
  analysisCap: integer("analysis_cap"),
  createdAt: createdAt(),
});

export const apiKeys = sqliteTable(
  "api_keys",
  {
    id: text("id").primaryKey(),
    orgId: text("org_id")
      .notNull()
      .references(() => organizations.id),
    /** SHA-256 of the key, hex. The key itself is shown once and never stored. */
    keyHash: text("key_hash").notNull().unique(),
    /** The key's first characters, so a person can tell keys apart in `key list`. */
    prefix: text("prefix").notNull(),
    /** A label a person gave the key in the dashboard. */
    name: text("name"),
    createdAt: createdAt(),
    /** Updated at most once a minute per key (worker/services/organizations.ts). */
    lastUsedAt: integer("last_used_at"),
    revokedAt: integer("revoked_at"),
  },
  (t) => [index("api_keys_org").on(t.orgId)],
);

/**
 * Runner tokens limited to named organizations: a lab's own runner, on its own GPU, that leases only
 * its organizations' jobs and is given URLs to nothing else. The fleet's tokens (RUNNER_TOKENS,
 * secrets of the deployment) see every organization and are never stored here.
 */
export const runnerTokens = sqliteTable("runner_tokens", {
  id: text("id").primaryKey(),
  /** SHA-256 of the token, hex. The token itself is shown once and never stored. */
  tokenHash: text("token_hash").notNull().unique(),
  /** The token's first characters, so a person can tell tokens apart in `runner-token list`. */
  prefix: text("prefix").notNull(),
  /** The ids of the organizations whose jobs it leases, a JSON array. */
  orgIds: text("org_ids", { mode: "json" }).$type<string[]>().notNull(),
  createdAt: createdAt(),
  revokedAt: integer("revoked_at"),
});

/** People who may use an organization's dashboard, by the email Cloudflare Access vouches for. */
export const organizationMembers = sqliteTable(
  "organization_members",
  {
    id: text("id").primaryKey(),
    orgId: text("org_id")
      .notNull()
      .references(() => organizations.id),
    /** Lower-cased. */
    email: text("email").notNull(),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex("organization_members_org_email").on(t.orgId, t.email), index("organization_members_email").on(t.email)],
);

/** One-time sign-in links (`npm run admin -- login-link`): only the token's SHA-256 is kept. */
export const dashboardLoginLinks = sqliteTable("dashboard_login_links", {
  tokenHash: text("token_hash").primaryKey(),
  orgId: text("org_id")
    .notNull()
    .references(() => organizations.id),
  expiresAt: integer("expires_at").notNull(),
  usedAt: integer("used_at"),
  createdAt: createdAt(),
});

/**
 * When a person last signed out of the dashboard under Cloudflare Access (by the email Access
 * vouches for). An Access token issued before then opens no new session: signing out is for good,
 * until Access signs them in again.
 */
export const dashboardSignOuts = sqliteTable("dashboard_sign_outs", {
  /** Lower-cased. */
  email: text("email").primaryKey(),
  signedOutAt: integer("signed_out_at").notNull(),
});

/** Dashboard sign-ins: the cookie carries the token, the table only its SHA-256. */
export const dashboardSessions = sqliteTable(
  "dashboard_sessions",
  {
    id: text("id").primaryKey(),
    tokenHash: text("token_hash").notNull().unique(),
    orgId: text("org_id")
      .notNull()
      .references(() => organizations.id),
    /** The member's email (Cloudflare Access); null for a session opened with a login link. */
    email: text("email"),
    expiresAt: integer("expires_at").notNull(),
    createdAt: createdAt(),
  },
  (t) => [index("dashboard_sessions_org").on(t.orgId)],
);

export const IMAGE_STATUSES = ["pending", "processing", "ready", "failed"] as const;
export type ImageStatus = (typeof IMAGE_STATUSES)[number];

export const images = sqliteTable(
  "images",
  {
    id: text("id").primaryKey(),
    orgId: text("org_id")
      .notNull()
      .references(() => organizations.id),
    name: text("name").notNull(),
    status: text("status", { enum: IMAGE_STATUSES }).notNull(),
    /** Declared (resumable) or received (streamed) size in bytes. */
    size: integer("size"),
    r2Key: text("r2_key").notNull(),
    format: text("format"),
    /** The format in words ("Aperio SVS", "OME-TIFF", "DICOM whole-slide", ...). */
    formatName: text("format_name"),
    width: integer("width"),
    height: integer("height"),
    channels: integer("channels"),
    bitDepth: integer("bit_depth"),
    planes: integer("planes"),
    /** Micrometres per pixel read from the file's metadata (schema/image-formats/calibration.ts), and where; null when it has none it trusts. */
    pixelSizeXUm: real("pixel_size_x_um"),
    pixelSizeYUm: real("pixel_size_y_um"),
    pixelSizeSource: text("pixel_size_source", { enum: PIXEL_SIZE_SOURCES }),
    /** Why the file's resolution gave no pixel size (a screen or print default, a size no microscope produces); null otherwise. */
    pixelSizeWarning: text("pixel_size_warning"),
    /** The channels' names from the file (OME-XML), JSON array of strings; null when it names none. */
    channelNames: text("channel_names", { mode: "json" }).$type<string[]>(),
    /** A pyramid's reduced-resolution levels, largest first, JSON [{width, height}]; the image is its full resolution. */
    levels: text("levels", { mode: "json" }).$type<{ width: number; height: number }[]>(),
    /**
     * The file's SHA-256, lowercase hex: computed by the worker as a one-call upload streams through,
     * as the client declared it for a resumable one (its parts go straight to storage); null if neither.
     */
    sha256: text("sha256"),
    /** The objective's magnification the file states; null when it states none. */
    objectiveMagnification: real("objective_magnification"),
    /**
     * R2 multipart upload in flight: a resumable upload's, or a streamed one's (recorded before its
     * first byte; such a record has no part_count); null once completed or aborted.
     */
    uploadId: text("upload_id"),
    partSize: integer("part_size"),
    partCount: integer("part_count"),
    uploadError: text("upload_error"),
    /**
     * Set by the one statement that claims the image for deletion (only while no queued or running
     * job uses it); from then on no job, import or preview is created for it. The record goes once
     * its bytes are deleted; the storage sweep finishes a deletion that was interrupted.
     */
    deletingSince: integer("deleting_since"),
    createdAt: createdAt(),
    updatedAt: integer("updated_at"),
  },
  (t) => [index("images_org").on(t.orgId), index("images_org_created").on(t.orgId, t.createdAt), index("images_org_sha256").on(t.orgId, t.sha256)],
);

/** Parts of a resumable upload that arrived through the worker's signed part URLs. */
export const uploadParts = sqliteTable(
  "upload_parts",
  {
    imageId: text("image_id").notNull(),
    partNumber: integer("part_number").notNull(),
    size: integer("size").notNull(),
    etag: text("etag").notNull(),
  },
  (t) => [uniqueIndex("upload_parts_pk").on(t.imageId, t.partNumber)],
);

export const models = sqliteTable(
  "models",
  {
    id: text("id").primaryKey(),
    /** Null for public models. */
    orgId: text("org_id").references(() => organizations.id),
    name: text("name").notNull(),
    version: text("version").notNull(),
    description: text("description"),
    baseModelId: text("base_model_id"),
    /** R2 prefix holding model.onnx and model.json: models/{id}/{version}/ */
    r2Prefix: text("r2_prefix").notNull(),
    /** Training summary (validation AP, steps, source images), JSON. */
    training: text("training", { mode: "json" }),
    trainingJobId: text("training_job_id").unique(),
    createdAt: createdAt(),
  },
  (t) => [index("models_org").on(t.orgId)],
);

/**
 * prediction and training are the analyses users submit; conversion (the worker's), preview and
 * measurement (a runner's: an imported segmentation's intensities, read from its image) are made
 * by the service for an image or a segmentation.
 */
/**
 * `block`: one block of a block-wise prediction (its parent), leased by any runner like a job (the
 * same rows, lease, attempts and sweep) and never shown as a job of its own.
 */
export const JOB_KINDS = ["prediction", "training", "conversion", "preview", "measurement", "block"] as const;
export type JobKind = (typeof JOB_KINDS)[number];
export const JOB_STATUSES = ["SUBMITTED", "STARTED", "COMPLETED", "FAILED"] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];
/**
 * Whose fault a failed attempt was. `input` (the image, its labels or the parameters) and `model`
 * (a model no runner can load or run) fail the job for good; `runner` (the machine running it) and
 * `service` (the worker, storage, the network) are worth another attempt.
 */
export const JOB_FAULTS = ["input", "model", "runner", "service"] as const;
export type JobFault = (typeof JOB_FAULTS)[number];

/** Only trouble with the machine or the service can go away on another attempt. */
export function isRetryableFault(fault: JobFault): boolean {
  return fault === "runner" || fault === "service";
}

export const jobs = sqliteTable(
  "jobs",
  {
    id: text("id").primaryKey(),
    orgId: text("org_id")
      .notNull()
      .references(() => organizations.id),
    kind: text("kind", { enum: JOB_KINDS }).notNull(),
    status: text("status", { enum: JOB_STATUSES }).notNull().default("SUBMITTED"),
    imageId: text("image_id"),
    modelId: text("model_id"),
    /** Kind-specific inputs (image ids of a training, segmentation parameters), JSON. */
    input: text("input", { mode: "json" }),
    /** Identifies identical submissions (kind, model, images, parameters). */
    dedupeKey: text("dedupe_key").notNull(),
    attempts: integer("attempts").notNull().default(0),
    maxAttempts: integer("max_attempts").notNull(),
    /** When the job's last queue message was sent; a SUBMITTED job whose message is old is re-sent. */
    enqueuedAt: integer("enqueued_at"),
    leaseHolder: text("lease_holder"),
    leaseToken: text("lease_token"),
    leaseExpiresAt: integer("lease_expires_at"),
    progress: real("progress"),
    stage: text("stage"),
    /** Why the job failed, or why its last attempt did. */
    reason: text("reason"),
    /** Whose fault that failure was (JOB_FAULTS): it decided whether the job was tried again. */
    fault: text("fault", { enum: JOB_FAULTS }),
    /** When the storage sweeper removed what a FAILED job's attempts wrote (ROI artifact, model files). */
    outputsClearedAt: integer("outputs_cleared_at"),
    result: text("result", { mode: "json" }),
    segmentationId: text("segmentation_id"),
    resultModelId: text("result_model_id"),
    createdAt: createdAt(),
    startedAt: integer("started_at"),
    finishedAt: integer("finished_at"),
    /**
     * How long a runner's job may take, counted from its first start across every attempt (startedAt):
     * past it the job is FAILED and not leased again (schema/work-limits.ts; a training's: its plan's
     * bound plus fetching and uploading). Null: none (conversions, run by the worker itself).
     */
    timeLimitSeconds: integer("time_limit_seconds"),
    /** A block's prediction: the block's lease ends when its prediction is no longer running. */
    parentJobId: text("parent_job_id"),
    /** A block's place in its prediction's grid, in raster order (engine/blocks/block-grid.ts). */
    blockIndex: integer("block_index"),
    /** A block-wise prediction's blocks: all of them, those done, and those of them that were glass (no signal, not segmented). */
    blocksTotal: integer("blocks_total"),
    blocksDone: integer("blocks_done"),
    blocksGlass: integer("blocks_glass"),
  },
  (t) => [
    index("jobs_org_kind_status").on(t.orgId, t.kind, t.status),
    uniqueIndex("jobs_parent_block").on(t.parentJobId, t.blockIndex),
    index("jobs_kind_status").on(t.kind, t.status),
    index("jobs_status_lease").on(t.status, t.leaseExpiresAt),
    index("jobs_org_created").on(t.orgId, t.createdAt),
  ],
);

export const SEGMENTATION_SOURCES = ["model", "import"] as const;

export const segmentations = sqliteTable(
  "segmentations",
  {
    id: text("id").primaryKey(),
    orgId: text("org_id")
      .notNull()
      .references(() => organizations.id),
    imageId: text("image_id").notNull(),
    imageName: text("image_name").notNull(),
    /** At most one segmentation per job, so a repeated completion records nothing new. */
    jobId: text("job_id").unique(),
    modelId: text("model_id"),
    modelName: text("model_name"),
    modelVersion: text("model_version"),
    source: text("source", { enum: SEGMENTATION_SOURCES }).notNull(),
    roiCount: integer("roi_count").notNull(),
    confluency: real("confluency").notNull(),
    /** Object diameter (px) the image was segmented at: the request's, or the engine's estimate. */
    diameter: real("diameter"),
    /** One-channel models: the modality the input was made for (schema/modality.ts), and whether it was detected or given. */
    modality: text("modality", { enum: MODALITIES }),
    modalitySource: text("modality_source", { enum: ["detected", "given"] }),
    /** Why it ran at `diameter` (schema/diameter-basis.ts): given, from the calibration, estimated or the model's; null before runners said. */
    diameterSource: text("diameter_source", { enum: DIAMETER_SOURCES }),
    diameterReason: text("diameter_reason"),
    width: integer("width").notNull(),
    height: integer("height").notNull(),
    /**
     * Micrometres per pixel the measurements are calibrated with: the prediction's `pixel_size_um`
     * ("given"), else the image's (its source); null when unknown.
     */
    pixelSizeXUm: real("pixel_size_x_um"),
    pixelSizeYUm: real("pixel_size_y_um"),
    pixelSizeSource: text("pixel_size_source", { enum: [...PIXEL_SIZE_SOURCES, "given"] }),
    artifactKey: text("artifact_key").notNull(),
    timings: text("timings", { mode: "json" }),
    createdAt: createdAt(),
  },
  (t) => [index("segmentations_image").on(t.orgId, t.imageId, t.createdAt)],
);

/** The local stand-in for Cloudflare Queues' HTTP pull consumer (see worker/queues/). */
export const pullQueueMessages = sqliteTable(
  "pull_queue_messages",
  {
    id: text("id").primaryKey(),
    queue: text("queue").notNull(),
    body: text("body", { mode: "json" }).notNull(),
    attempts: integer("attempts").notNull().default(0),
    visibleAt: integer("visible_at").notNull(),
    leaseId: text("lease_id").unique(),
    createdAt: createdAt(),
  },
  (t) => [index("pull_queue_visible").on(t.queue, t.visibleAt)],
);
