// Image records and their bytes. A record counts against the organization's storage cap
// (storage-cap.ts) from the moment it is reserved until it is deleted, whatever its status.
import { and, desc, eq, sql } from "drizzle-orm";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";
import type { ImageRecord } from "../../schema/api-records.ts";
import { images, type ImageStatus, jobs, segmentations, uploadParts } from "../../schema/db.ts";
import type { Bindings, Organization } from "../env.ts";
import { HttpError, notFound } from "../errors.ts";
import { newId } from "./crypto.ts";
import { database } from "../storage/database.ts";
import { after, newestFirst, type PageRequest, toPage } from "./pages.ts";
import { storageCapReached, storedRecords } from "./storage-cap.ts";
import { imageFullPrefix, imageKey, imagePreviewKey, segmentationPrefix } from "../../schema/storage-keys.ts";

export type Image = typeof images.$inferSelect;

/** Creates a record in one statement that also checks the storage cap, so concurrent uploads and imports never pass it. */
export async function reserveImage(env: Bindings, org: Organization, name: string, size: number | null): Promise<Image> {
  const id = newId();
  const now = Date.now();
  const query = new SQLiteAsyncDialect().sqlToQuery(sql`INSERT INTO ${images} (id, org_id, name, status, size, r2_key, created_at, updated_at)
     SELECT ${id}, ${org.id}, ${name}, 'pending', ${size}, ${imageKey(org.id, id)}, ${now}, ${now}
     WHERE ${storedRecords(org.id)} < ${org.storageCap}
     RETURNING id`);
  const row = await env.DB.prepare(query.sql)
    .bind(...query.params)
    .first<{ id: string }>();
  if (!row) throw storageCapReached(org);
  return (await getImage(env.DB, org.id, id))!;
}

export async function getImage(d1: D1Database, orgId: string, id: string): Promise<Image | null> {
  const [image] = await database(d1)
    .select()
    .from(images)
    .where(and(eq(images.id, id), eq(images.orgId, orgId)))
    .limit(1);
  return image ?? null;
}

export async function listImages(d1: D1Database, orgId: string, filter: { status?: ImageStatus; sha256?: string }, page: PageRequest) {
  const rows = await database(d1)
    .select()
    .from(images)
    .where(
      and(
        eq(images.orgId, orgId),
        filter.status ? eq(images.status, filter.status) : undefined,
        filter.sha256 ? eq(images.sha256, filter.sha256) : undefined,
        after(images, page.cursor),
      ),
    )
    .orderBy(...newestFirst(images))
    .limit(page.limit + 1);
  return toPage(rows, page.limit, imageView);
}

export async function updateImage(d1: D1Database, id: string, changes: Partial<Image>): Promise<Image> {
  const [image] = await database(d1)
    .update(images)
    .set({ ...changes, updatedAt: Date.now() })
    .where(eq(images.id, id))
    .returning();
  // Callers update an image they hold: only a DELETE racing the update leaves no row, and the
  // image is then gone as far as the caller is concerned.
  if (!image) throw notFound("Image", id);
  return image;
}

/** Deletes every R2 object under a prefix. */
export async function deletePrefix(bucket: R2Bucket, prefix: string): Promise<void> {
  let cursor: string | undefined;
  do {
    const listing = await bucket.list({ prefix, cursor });
    if (listing.objects.length) await bucket.delete(listing.objects.map((o) => o.key));
    cursor = listing.truncated ? listing.cursor : undefined;
  } while (cursor);
}

/**
 * The jobs rows of queued or running predictions and trainings that use image ?1 of organization
 * ?2 (a training names its images in its input).
 */
const ACTIVE_JOBS_USING_IMAGE = `org_id = ?2 AND status IN ('SUBMITTED', 'STARTED') AND (
    (kind = 'prediction' AND image_id = ?1) OR
    (kind = 'training' AND EXISTS (SELECT 1 FROM json_each(json_extract(input, '$.image_ids')) WHERE value = ?1)))`;

/** The queued or running prediction or training that uses an image, if any (to say which). */
async function activeJobUsing(d1: D1Database, image: Image): Promise<{ id: string; kind: string; status: string } | null> {
  return d1
    .prepare(`SELECT id, kind, status FROM jobs WHERE ${ACTIVE_JOBS_USING_IMAGE} ORDER BY created_at LIMIT 1`)
    .bind(image.id, image.orgId)
    .first<{ id: string; kind: string; status: string }>();
}

/**
 * Removes an image completely: an in-flight multipart upload, its bytes, its segmentations and
 * their artifacts, and the record (which frees its storage slot). Refused (409) while a queued or
 * running prediction or training uses it: deleting it would fail that job, which the organization
 * asked for; it may wait for the job to end instead. A conversion still queued is failed with it.
 *
 * Deleting and submitting cannot interleave: the image is first claimed (deleting_since) by one
 * statement that succeeds only while no queued or running job uses it, and a job, an import or a
 * preview is inserted only while its image is ready and unclaimed (jobs.ts, segmentation-imports.ts),
 * so D1 orders the two and exactly one wins. Bytes go before the record, so an interrupted deletion
 * leaves a claimed record (which the storage sweep deletes again), never bytes without a record.
 */
export async function deleteImage(env: Bindings, image: Image): Promise<void> {
  const db = database(env.DB);
  const claimed = await env.DB.prepare(
    `UPDATE images SET deleting_since = coalesce(deleting_since, ?3) WHERE id = ?1 AND org_id = ?2 AND NOT EXISTS (SELECT 1 FROM jobs WHERE ${ACTIVE_JOBS_USING_IMAGE}) RETURNING id`,
  )
    .bind(image.id, image.orgId, Date.now())
    .first<{ id: string }>();
  if (!claimed) {
    const busy = await activeJobUsing(env.DB, image);
    if (busy) {
      const doing = busy.status === "STARTED" ? "running" : "queued";
      throw new HttpError(409, `Image ${image.id} is used by ${doing} ${busy.kind} ${busy.id}; delete it once that job has finished`);
    }
    return; // another request deleted it meanwhile
  }

  if (image.uploadId)
    await env.BUCKET.resumeMultipartUpload(image.r2Key, image.uploadId)
      .abort()
      .catch(() => undefined);
  await env.BUCKET.delete([image.r2Key, imagePreviewKey(image.orgId, image.id)]);
  await deletePrefix(env.BUCKET, imageFullPrefix(image.orgId, image.id));
  const owned = await db
    .select({ id: segmentations.id })
    .from(segmentations)
    .where(and(eq(segmentations.imageId, image.id), eq(segmentations.orgId, image.orgId)));
  for (const s of owned) await deletePrefix(env.BUCKET, segmentationPrefix(image.orgId, s.id));
  await db.batch([
    db.delete(uploadParts).where(eq(uploadParts.imageId, image.id)),
    db.delete(segmentations).where(and(eq(segmentations.imageId, image.id), eq(segmentations.orgId, image.orgId))),
    db
      .update(jobs)
      .set({ status: "FAILED", reason: "Image was deleted", fault: "input", finishedAt: Date.now() })
      .where(and(eq(jobs.imageId, image.id), eq(jobs.status, "SUBMITTED"))),
    db.delete(images).where(eq(images.id, image.id)),
  ]);
}

/** Why a job or an import cannot use this image (409), or null when it can. */
export function unusable(image: Image): HttpError | null {
  if (image.deletingSince !== null) return new HttpError(409, `Image ${image.id} is being deleted`);
  if (image.status !== "ready") return new HttpError(409, `Image ${image.id} is ${image.status}, not ready: wait for its upload to finish processing`);
  return null;
}

export function imageView(image: Image): ImageRecord {
  return {
    id: image.id,
    name: image.name,
    upload_status: image.status,
    size: image.size,
    format: image.format,
    format_name: image.formatName,
    width: image.width,
    height: image.height,
    channels: image.channels,
    bit_depth: image.bitDepth,
    planes: image.planes,
    pixel_size:
      image.pixelSizeXUm !== null && image.pixelSizeYUm !== null && image.pixelSizeSource !== null
        ? { x_um: image.pixelSizeXUm, y_um: image.pixelSizeYUm, source: image.pixelSizeSource }
        : null,
    pixel_size_warning: image.pixelSizeWarning,
    channel_names: image.channelNames ?? null,
    levels: image.width !== null && image.height !== null ? [{ width: image.width, height: image.height }, ...(image.levels ?? [])] : null,
    level_read: image.width !== null ? 0 : null,
    sha256: image.sha256,
    objective_magnification: image.objectiveMagnification,
    upload_error: image.uploadError,
    created_at: new Date(image.createdAt).toISOString(),
  };
}

/** The organization's newest images as rows, for the dashboard's server-rendered list (the API pages through listImages). */
export async function recentImages(d1: D1Database, orgId: string, limit = 500): Promise<Image[]> {
  return database(d1).select().from(images).where(eq(images.orgId, orgId)).orderBy(desc(images.createdAt)).limit(limit);
}
