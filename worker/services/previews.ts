// The dashboard's image previews: tile archives (schema/preview-tiles.ts) a runner makes once per
// image, either for a preview job (requested when the dashboard uploads or shows an image that has
// none) or beside the image's first segmentation. Read here with R2 range reads, a tile at a time.
// A slide predicted block-wise also has a full-resolution level: a tile archive per block core and a
// manifest naming the cores (schema/preview-tiles.ts fullResolutionManifest), read the same way.
import {
  type FullResolutionManifest,
  fullResolutionManifest,
  PREVIEW_INDEX_MAX_BYTES,
  type PreviewIndex,
  readPreviewHeader,
  tileRange,
} from "../../schema/preview-tiles.ts";
import { and, eq } from "drizzle-orm";
import { jobs } from "../../schema/db.ts";
import type { Bindings } from "../env.ts";
import { HttpError } from "../errors.ts";
import { database } from "../storage/database.ts";
import { getImage, type Image } from "./images.ts";
import { createPreviewJob, type Job, tooManyJobsInHand } from "./jobs.ts";
import { imageFullManifestKey, imageFullTilesKey, imagePreviewKey } from "../../schema/storage-keys.ts";
import { MODALITIES, type Modality } from "../../schema/modality.ts";

async function header(bucket: R2Bucket, key: string): Promise<{ index: PreviewIndex; dataStart: number } | null> {
  const object = await bucket.get(key, { range: { offset: 0, length: PREVIEW_INDEX_MAX_BYTES } });
  if (!object) return null;
  return readPreviewHeader(new Uint8Array(await object.arrayBuffer()));
}

export async function previewIndexOf(env: Bindings, image: Pick<Image, "orgId" | "id">): Promise<PreviewIndex | null> {
  return (await header(env.BUCKET, imagePreviewKey(image.orgId, image.id)))?.index ?? null;
}

/** One tile's PNG bytes as a stream, or null when the image has no preview or no such tile. */
export async function previewTile(
  env: Bindings,
  image: Pick<Image, "orgId" | "id">,
  level: number,
  column: number,
  row: number,
): Promise<ReadableStream | null> {
  const key = imagePreviewKey(image.orgId, image.id);
  const found = await header(env.BUCKET, key);
  const range = found && tileRange(found.index, found.dataStart, level, column, row);
  if (!range) return null;
  return (await env.BUCKET.get(key, { range }))?.body ?? null;
}

/** The image's full-resolution level's manifest, or null when it has none. */
export async function fullResolutionOf(env: Bindings, image: Pick<Image, "orgId" | "id">): Promise<FullResolutionManifest | null> {
  const object = await env.BUCKET.get(imageFullManifestKey(image.orgId, image.id));
  if (!object) return null;
  return fullResolutionManifest.parse(await object.json());
}

/** One full-resolution tile of block `block`'s core as a stream, or null when there is no such tile. */
export async function fullResolutionTile(
  env: Bindings,
  image: Pick<Image, "orgId" | "id">,
  block: number,
  column: number,
  row: number,
): Promise<ReadableStream | null> {
  const manifest = await fullResolutionOf(env, image);
  if (!manifest || block >= manifest.blocks.length) return null;
  const key = imageFullTilesKey(image.orgId, image.id, manifest.core_side, block);
  const found = await header(env.BUCKET, key);
  const range = found && tileRange(found.index, found.dataStart, 0, column, row);
  if (!range) return null;
  return (await env.BUCKET.get(key, { range }))?.body ?? null;
}

type PreviewState = { status: "ready" } | { status: "SUBMITTED" | "STARTED" | "FAILED"; job_id: string; reason: string | null };

export function previewState(job: Job): PreviewState {
  if (job.status === "COMPLETED") return { status: "ready" };
  return { status: job.status, job_id: job.id, reason: job.reason };
}

/** The image's preview job, if one was ever asked for. */
export async function previewJobOf(d1: D1Database, image: Pick<Image, "orgId" | "id">): Promise<Job | null> {
  const [job] = await database(d1)
    .select()
    .from(jobs)
    .where(and(eq(jobs.orgId, image.orgId), eq(jobs.kind, "preview"), eq(jobs.imageId, image.id)))
    .limit(1);
  return job ?? null;
}

/**
 * Asks a runner for the image's preview unless it has one or one was asked for already (one preview
 * job per image, ever: a FAILED one is answered with its reason, not tried again).
 */
export async function requestPreview(env: Bindings, image: Image): Promise<PreviewState> {
  if (await env.BUCKET.head(imagePreviewKey(image.orgId, image.id))) return { status: "ready" };
  const job = (await createPreviewJob(env, image)) ?? (await previewJobOf(env.DB, image));
  if (!job) {
    // Neither made now nor ever before: the image was claimed for deletion meanwhile, or the
    // organization has its most previews in hand.
    const current = await getImage(env.DB, image.orgId, image.id);
    if (!current || current.deletingSince !== null) throw new HttpError(409, `Image ${image.id} is being deleted`);
    throw tooManyJobsInHand("preview");
  }
  return previewState(job);
}

/** What the image's pixels are, as its completed preview found them (the dashboard offers the model recommended for it); null before. */
export function previewModalityOf(job: Job | null): Modality | null {
  if (job?.status !== "COMPLETED") return null;
  const found = (job.result as { modality?: { modality?: string } } | null)?.modality?.modality;
  return MODALITIES.find((m) => m === found) ?? null;
}
