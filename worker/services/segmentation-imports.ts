// Imported segmentations (POST /segmentation): an annotation file made in Fiji, QuPath or napari
// becomes a segmentation of source "import", stored like a model's (a ROI artifact plus a row).
// The file is read whole (it is bounded by MAX_IMPORT_FILE_BYTES) and parsed before anything is
// stored; the artifact goes to R2 first and the row only if the image still exists and is ready,
// so a refusal or a race with the image's deletion leaves nothing behind. Imports are not
// analyses: they do not count against the monthly analysis cap.

import { and, eq, getTableColumns, sql } from "drizzle-orm";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";
import { segmentationImportFields } from "../../schema/api.ts";
import { images, segmentations } from "../../schema/db.ts";
import { encodeRoiArtifact } from "../../schema/roi-artifact-writer.ts";
import { AnnotationImportError, importAnnotation, importErrorStatus } from "../annotations/index.ts";
import { MAX_IMPORT_FILE_BYTES } from "../annotations/limits.ts";
import type { Bindings, Organization } from "../env.ts";
import { HttpError, notFound } from "../errors.ts";
import { parseOrReject, type ValidationIssue } from "../validation.ts";
import { newId } from "./crypto.ts";
import { database } from "./database.ts";
import { deletePrefix, getImage } from "./images.ts";
import { boundaryOf, MultipartError, readMultipart } from "./multipart-form.ts";
import { getSegmentation, type Segmentation } from "./segmentations.ts";
import { artifactKey, segmentationPrefix } from "../../schema/storage-keys.ts";

const MAX_FIELD_BYTES = 1024;

interface ImportForm {
  imageId: string;
  file: Uint8Array;
}

/** Reads the `image_id` field and the `file` part, refusing a file over the limit as it arrives. */
async function readImportForm(request: Request): Promise<ImportForm> {
  const boundary = boundaryOf(request.headers.get("Content-Type"));
  if (!boundary || !request.body) throw new HttpError(415, "Send multipart/form-data with a field 'image_id' and the annotation file in a part named 'file'");
  const fields: Record<string, string> = {};
  let file: Uint8Array | null = null;
  let part: string | null = null;
  let chunks: Uint8Array[] = [];
  let size = 0;
  const decoder = new TextDecoder();
  try {
    for await (const event of readMultipart(request.body, boundary)) {
      if (event.type === "part") {
        part = event.name;
        chunks = [];
        size = 0;
      } else if (event.type === "data") {
        if (part !== "file" && part !== "image_id") continue;
        size += event.bytes.length;
        const limit = part === "file" ? MAX_IMPORT_FILE_BYTES : MAX_FIELD_BYTES;
        if (size > limit) {
          if (part === "image_id")
            throw new HttpError(422, [{ loc: ["body", "image_id"], msg: "String should have at most 100 characters", type: "string_too_long" }]);
          throw new AnnotationImportError(
            "limit_exceeded",
            `the file has more than ${MAX_IMPORT_FILE_BYTES.toLocaleString("en-US")} bytes, the most an annotation may have`,
          );
        }
        chunks.push(event.bytes);
      } else {
        const bytes = new Uint8Array(size);
        let at = 0;
        for (const c of chunks) {
          bytes.set(c, at);
          at += c.length;
        }
        if (part === "file") file = bytes;
        else if (part === "image_id") fields.image_id = decoder.decode(bytes);
        part = null;
      }
    }
  } catch (error) {
    await request.body.cancel().catch(() => undefined);
    if (error instanceof MultipartError) throw new HttpError(400, `Malformed multipart body: ${error.message}`);
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
  if (image.status !== "ready" || !image.width || !image.height) {
    throw new HttpError(409, `Image ${image.id} is ${image.status}, not ready: wait for its upload to finish processing`);
  }
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
  try {
    const result = await insertIfImageReady(env.DB, row).run();
    if (result.meta.changes !== 1) throw notFound("Image", image.id);
  } catch (error) {
    await env.BUCKET.delete(key);
    throw error;
  }
  return (await getSegmentation(env.DB, org.id, id))!;
}

/** The row, inserted only while its image exists and is ready (a concurrent delete wins). */
function insertIfImageReady(d1: D1Database, row: Record<string, string | number | null>): D1PreparedStatement {
  const columns = getTableColumns(segmentations) as Record<string, { name: string }>;
  const entries = Object.entries(row);
  const names = sql.join(
    entries.map(([k]) => sql.identifier(columns[k].name)),
    sql`, `,
  );
  const values = sql.join(
    entries.map(([, v]) => sql`${v}`),
    sql`, `,
  );
  const query = new SQLiteAsyncDialect().sqlToQuery(sql`INSERT INTO ${segmentations} (${names}) SELECT ${values}
    WHERE EXISTS (SELECT 1 FROM ${images} WHERE ${images.id} = ${row.imageId} AND ${images.orgId} = ${row.orgId} AND ${images.status} = 'ready')`);
  return d1.prepare(query.sql).bind(...query.params);
}

/** Removes a segmentation (of any source): its row, then its artifact and anything else under its prefix. */
export async function deleteSegmentation(env: Bindings, segmentation: Segmentation): Promise<void> {
  await database(env.DB)
    .delete(segmentations)
    .where(and(eq(segmentations.id, segmentation.id), eq(segmentations.orgId, segmentation.orgId)));
  await deletePrefix(env.BUCKET, segmentationPrefix(segmentation.orgId, segmentation.id));
}
