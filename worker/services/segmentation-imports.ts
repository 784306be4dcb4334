// Imported segmentations (POST /segmentation): an annotation file made in Fiji, QuPath or napari
// becomes a segmentation of source "import", stored like a model's (a ROI artifact plus a row).
// The file is read whole (it is bounded by MAX_IMPORT_FILE_BYTES, and held once) and parsed before
// anything is stored; the artifact goes to R2 first and the row only if the image still exists and
// is ready, so a refusal or a race with the image's deletion leaves nothing behind. Imports are not
// analyses: they do not count against the monthly analysis cap; they are stored files, and count
// against the storage cap with the images (storage-cap.ts). Their intensities need the image's
// pixels: a measurement job asks a runner for them, and its artifact then replaces the import's;
// an organization has at most JOBS_IN_HAND_PER_ORG.measurement of them queued or running, past
// which an import is answered 429 (jobs.ts, as previews are).

import { getTableColumns, sql } from "drizzle-orm";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";
import { segmentationImportFields } from "../../schema/api.ts";
import { images, segmentations } from "../../schema/db.ts";
import { encodeRoiArtifact } from "../../common/roi-artifact/writer.ts";
import { AnnotationImportError, importAnnotation, importErrorStatus } from "../annotations/index.ts";
import { MAX_IMPORT_FILE_BYTES } from "../annotations/limits.ts";
import type { Bindings, Organization } from "../env.ts";
import { HttpError, notFound } from "../errors.ts";
import { parseOrReject, type ValidationIssue } from "../validation.ts";
import { newId } from "./crypto.ts";
import { deletePrefix, getImage, unusable } from "./images.ts";
import { boundaryOf, readMultipart } from "./multipart-form.ts";
import { belowJobsInHand, isBelowJobsInHand, measurementJob, tooManyJobsInHand } from "./jobs.ts";
import { getSegmentation, type Segmentation } from "./segmentations.ts";
import { storageCapReached, storageUsage, storedRecords } from "./storage-cap.ts";
import { artifactKey, segmentationPrefix } from "../../schema/storage-keys.ts";

const MAX_FIELD_BYTES = 1024;

interface ImportForm {
  imageId: string;
  file: Uint8Array;
}

/**
 * The file part's bytes, written into one buffer as they arrive: sized from the request's
 * Content-Length when it has one (the file is at most the body), else grown by doubling. Keeping
 * the chunks and joining them at the end held the file twice, 80 MiB of a Worker's 128 MB at the
 * size limit.
 */
class PartBuffer {
  private bytes: Uint8Array;
  length = 0;
  constructor(expected: number) {
    this.bytes = new Uint8Array(expected);
  }
  append(chunk: Uint8Array): void {
    if (this.length + chunk.length > this.bytes.length) {
      const grown = new Uint8Array(Math.min(MAX_IMPORT_FILE_BYTES, Math.max(this.length + chunk.length, 2 * this.bytes.length)));
      grown.set(this.bytes.subarray(0, this.length));
      this.bytes = grown;
    }
    this.bytes.set(chunk, this.length);
    this.length += chunk.length;
  }
  /** The bytes received (a view: the buffer is not used again). */
  take(): Uint8Array {
    return this.bytes.subarray(0, this.length);
  }
}

/**
 * Reads the `image_id` field and the `file` part, refusing a file over the limit as it arrives. Each
 * may come once (a second is refused with 400), so the file's buffer is allocated once.
 */
async function readImportForm(request: Request): Promise<ImportForm> {
  const boundary = boundaryOf(request.headers.get("Content-Type"));
  if (!boundary || !request.body) throw new HttpError(415, "Send multipart/form-data with a field 'image_id' and the annotation file in a part named 'file'");
  const declared = Number(request.headers.get("Content-Length"));
  const expected = Number.isSafeInteger(declared) && declared > 0 ? Math.min(declared, MAX_IMPORT_FILE_BYTES) : 1024 * 1024;
  const fields: Record<string, string> = {};
  let file: Uint8Array | null = null;
  let part: string | null = null;
  let buffer: PartBuffer | null = null;
  const decoder = new TextDecoder();
  try {
    for await (const event of readMultipart(request.body, boundary, ["file", "image_id"])) {
      if (event.type === "part") {
        part = event.name;
        buffer = part === "file" ? new PartBuffer(expected) : part === "image_id" ? new PartBuffer(MAX_FIELD_BYTES) : null;
      } else if (event.type === "data") {
        if (!buffer) continue;
        const limit = part === "file" ? MAX_IMPORT_FILE_BYTES : MAX_FIELD_BYTES;
        if (buffer.length + event.bytes.length > limit) {
          if (part === "image_id")
            throw new HttpError(422, [{ loc: ["body", "image_id"], msg: "String should have at most 100 characters", type: "string_too_long" }]);
          throw new AnnotationImportError(
            "limit_exceeded",
            `the file has more than ${MAX_IMPORT_FILE_BYTES.toLocaleString("en-US")} bytes, the most an annotation may have`,
          );
        }
        buffer.append(event.bytes);
      } else {
        if (part === "file" && buffer) file = buffer.take();
        else if (part === "image_id" && buffer) fields.image_id = decoder.decode(buffer.take());
        part = null;
        buffer = null;
      }
    }
  } catch (error) {
    await request.body.cancel().catch(() => undefined);
    throw error;
  }
  const missingFile: ValidationIssue[] = file ? [] : [{ loc: ["body", "file"], msg: "Field required", type: "missing" }];
  let imageId = "";
  try {
    imageId = parseOrReject(segmentationImportFields, fields, "body").image_id;
  } catch (error) {
    if (error instanceof HttpError && Array.isArray(error.detail)) throw new HttpError(422, [...error.detail, ...missingFile]);
    throw error;
  }
  if (!file) throw new HttpError(422, missingFile);
  return { imageId, file };
}

function refusal(error: unknown): unknown {
  return error instanceof AnnotationImportError ? new HttpError(importErrorStatus(error.kind), `Annotation refused: ${error.message}`) : error;
}

export async function importSegmentation(env: Bindings, org: Organization, request: Request): Promise<Segmentation> {
  let form: ImportForm;
  try {
    form = await readImportForm(request);
  } catch (error) {
    throw refusal(error);
  }
  const image = await getImage(env.DB, org.id, form.imageId);
  if (!image) throw notFound("Image", form.imageId);
  // Refused before the file is parsed and stored; the insert below checks again, atomically.
  const stored = await storageUsage(env.DB, org.id);
  if (stored.images + stored.imports >= org.storageCap) throw storageCapReached(org);
  const problem = unusable(image);
  if (problem) throw problem;
  if (!image.width || !image.height) throw new HttpError(409, `Image ${image.id} has no known size`);
  if (!(await isBelowJobsInHand(env.DB, "measurement", org.id))) throw tooManyJobsInHand("measurement");
  let imported: ReturnType<typeof importAnnotation>;
  try {
    imported = importAnnotation(form.file, image.width, image.height);
  } catch (error) {
    throw refusal(error);
  }
  const id = newId();
  const key = artifactKey(org.id, id);
  const artifact: Uint8Array[] = [];
  const description = { imageWidth: image.width, imageHeight: image.height, confluency: imported.confluency, modelName: "", modelVersion: "" };
  for await (const chunk of encodeRoiArtifact(description, imported.rois)) artifact.push(chunk);
  await env.BUCKET.put(key, new Blob(artifact));
  const row = {
    id,
    orgId: org.id,
    imageId: image.id,
    imageName: image.name,
    source: "import",
    roiCount: imported.rois.length,
    confluency: imported.confluency,
    width: image.width,
    height: image.height,
    // The image's own pixel size calibrates the imported cells' measurements.
    pixelSizeXUm: image.pixelSizeXUm,
    pixelSizeYUm: image.pixelSizeYUm,
    pixelSizeSource: image.pixelSizeSource,
    artifactKey: key,
    createdAt: Date.now(),
  } as const;
  // The runner measures the cells' intensities from the image afterwards (measurement job).
  const measurement = measurementJob(env, row);
  try {
    const [result] = await env.DB.batch([insertIfImageReady(env.DB, row, org.storageCap), measurement.statement]);
    // D1's batch answers one result per statement, in order.
    if (result!.meta.changes !== 1) throw await whyNotInserted(env, org, image.id);
  } catch (error) {
    await env.BUCKET.delete(key);
    throw error;
  }
  await measurement.wakeUp().catch((error) => console.error(`import ${id}: its measurement's queue message was not sent; the sweep sends it`, error));
  return (await getSegmentation(env.DB, org.id, id))!;
}

/** The insert's conditions, checked again to say which one failed (the lasting ones first). */
async function whyNotInserted(env: Bindings, org: Organization, imageId: string): Promise<HttpError> {
  const image = await getImage(env.DB, org.id, imageId);
  if (!image) return notFound("Image", imageId);
  const problem = unusable(image);
  if (problem) return problem;
  const stored = await storageUsage(env.DB, org.id);
  if (stored.images + stored.imports >= org.storageCap) return storageCapReached(org);
  // Else the measurements in hand, or a race that has passed since: either way, ask again.
  return tooManyJobsInHand("measurement");
}

/**
 * The row, inserted only while its image exists, is ready and is not claimed by a deletion (a
 * concurrent delete wins), the organization is under its storage cap (concurrent imports and
 * uploads never pass it) and below its measurements in hand (the row's own measurement is inserted
 * after it, in the same batch).
 */
function insertIfImageReady(d1: D1Database, row: Record<string, string | number | null>, storageCap: number): D1PreparedStatement {
  const columns = getTableColumns(segmentations) as Record<string, { name: string }>;
  const entries = Object.entries(row);
  const names = sql.join(
    entries.map(([k]) => {
      const column = columns[k];
      if (!column) throw new Error(`${k} is not a column of the table`);
      return sql.identifier(column.name);
    }),
    sql`, `,
  );
  const values = sql.join(
    entries.map(([, v]) => sql`${v}`),
    sql`, `,
  );
  const query = new SQLiteAsyncDialect().sqlToQuery(sql`INSERT INTO ${segmentations} (${names}) SELECT ${values}
    WHERE EXISTS (SELECT 1 FROM ${images} WHERE ${images.id} = ${row.imageId} AND ${images.orgId} = ${row.orgId} AND ${images.status} = 'ready'
                    AND ${images.deletingSince} IS NULL)
      AND ${storedRecords(String(row.orgId))} < ${storageCap}
      AND ${belowJobsInHand("measurement", String(row.orgId))}`);
  return d1.prepare(query.sql).bind(...query.params);
}

/** The jobs rows of queued or running trainings that learn from segmentation ?1 of organization ?2. */
const ACTIVE_TRAININGS_USING_SEGMENTATION = `org_id = ?2 AND kind = 'training' AND status IN ('SUBMITTED', 'STARTED')
  AND EXISTS (SELECT 1 FROM json_each(json_extract(input, '$.segmentation_ids')) WHERE value = ?1)`;

/**
 * Removes a segmentation (of any source): its row, then its artifact and anything else under its
 * prefix. Refused (409) while a queued or running training learns from it. The row is deleted by
 * one statement that checks that, and a training is inserted only while its segmentations exist
 * (jobs.ts), so a deletion and a training's submission cannot interleave.
 */
export async function deleteSegmentation(env: Bindings, segmentation: Segmentation): Promise<void> {
  const deleted = await env.DB.prepare(
    `DELETE FROM segmentations WHERE id = ?1 AND org_id = ?2 AND NOT EXISTS (SELECT 1 FROM jobs WHERE ${ACTIVE_TRAININGS_USING_SEGMENTATION}) RETURNING id`,
  )
    .bind(segmentation.id, segmentation.orgId)
    .first<{ id: string }>();
  if (!deleted) {
    const training = await env.DB.prepare(`SELECT id, status FROM jobs WHERE ${ACTIVE_TRAININGS_USING_SEGMENTATION} ORDER BY created_at LIMIT 1`)
      .bind(segmentation.id, segmentation.orgId)
      .first<{ id: string; status: string }>();
    if (training) {
      const doing = training.status === "STARTED" ? "running" : "queued";
      throw new HttpError(409, `Segmentation ${segmentation.id} is what ${doing} training ${training.id} learns from; delete it once that job has finished`);
    }
    return; // another request deleted it meanwhile
  }
  await deletePrefix(env.BUCKET, segmentationPrefix(segmentation.orgId, segmentation.id));
}
