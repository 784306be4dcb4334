// The two ways an image arrives:
//  - streamed: POST /upload multipart/form-data; the file part flows into an R2 multipart upload
//    part by part (never buffered whole), then the stored header is probed;
//  - resumable: POST /upload {name, size} hands out one signed URL per part; the client PUTs the
//    parts (retrying any), then POST /upload/{id}/complete checks them, completes the R2 upload
//    and queues a conversion job that probes the stored image.
import { and, eq } from "drizzle-orm";
import { z } from "zod";
import { imageName } from "../../schema/api.ts";
import { images, uploadParts } from "../../schema/db.ts";
import type { Bindings, Organization } from "../env.ts";
import { HttpError } from "../errors.ts";
import { database } from "../storage/database.ts";
import { ImageDecodeError, sniffImageFormat, SNIFF_BYTES, unsupportedFileMessage } from "../../schema/image-formats/index.ts";
import type { ImageProbe } from "../../common/decode/decoded-image.ts";
import { probeStoredObject } from "./image-probe.ts";
import { deleteImage, type Image, reserveImage, updateImage } from "./images.ts";
import { createConversionJob } from "./jobs.ts";
import { listR2Parts } from "./r2-s3.ts";
import { settings } from "./settings.ts";
import { signStorageUrl } from "./signed-urls.ts";
import { boundaryOf, readMultipart } from "./multipart-form.ts";
import { parseOrReject } from "../validation.ts";

const MiB = 1024 * 1024;
const MAX_PARTS = 10_000;
/** Parts of a streamed upload: R2 wants equal parts of at least 5 MiB, except the last. */
const STREAM_PART_SIZE = 8 * MiB;

/** A streamed upload's file name obeys the same rule as a resumable upload's `name`. */
const streamedFileName = z.object({ file: z.object({ filename: imageName }) });

// Exported for its test only (test/worker/part-sizes.test.ts).
/**
 * The largest part: each part PUT is one request through Cloudflare, whose zones accept bodies of
 * at most 100 MB (10^8 bytes) on the Free and Pro plans, so a part stays under that on every plan.
 */
export const MAX_PART_SIZE = 95 * MiB;
// Exported for its test only (test/worker/part-sizes.test.ts).
/** The largest file a resumable upload can carry: 10,000 parts of MAX_PART_SIZE (about 928 GiB). */
export const MAX_RESUMABLE_SIZE = MAX_PARTS * MAX_PART_SIZE;

// Exported for its test only (test/worker/part-sizes.test.ts).
/**
 * R2 needs equal parts (except the last) of at least 5 MiB and at most 10,000 of them; 8 MiB unless
 * that takes more parts, then the smallest whole MiB that fits, never above MAX_PART_SIZE.
 */
export function partSizeFor(size: number): number {
  const floor = 8 * MiB;
  if (Math.ceil(size / floor) <= MAX_PARTS) return floor;
  if (size > MAX_RESUMABLE_SIZE) throw new RangeError(`${size} bytes need parts above ${MAX_PART_SIZE} bytes`);
  return Math.ceil(size / MAX_PARTS / MiB) * MiB;
}

const hex = (digest: ArrayBuffer) => Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");

/** Not an image we read at all: 415; a broken, truncated or over-limit one: 422. */
function probeFailure(error: ImageDecodeError): HttpError {
  return new HttpError(error.kind === "unsupported" ? 415 : 422, error.message);
}

async function recordProbe(env: Bindings, image: Image, info: ImageProbe, size: number): Promise<Image> {
  return updateImage(env.DB, image.id, {
    status: "ready",
    size,
    format: info.format,
    formatName: info.formatName,
    levels: info.levels,
    objectiveMagnification: info.objectiveMagnification,
    width: info.width,
    height: info.height,
    channels: info.channels,
    bitDepth: info.bitDepth,
    planes: info.pages,
    pixelSizeXUm: info.pixelSize?.x ?? null,
    pixelSizeYUm: info.pixelSize?.y ?? null,
    pixelSizeSource: info.pixelSize?.source ?? null,
    pixelSizeWarning: info.pixelSizeWarning,
    channelNames: info.channelNames,
    uploadId: null,
    uploadError: null,
  });
}

/** Cuts a byte stream into parts of exactly `partSize` (the last may be shorter). */
class PartBuffer {
  private readonly partSize: number;
  private buffer: Uint8Array;
  private filled = 0;
  constructor(partSize: number) {
    this.partSize = partSize;
    this.buffer = new Uint8Array(partSize);
  }
  /** Copies bytes in; returns the full parts that are ready. */
  *push(bytes: Uint8Array): Generator<Uint8Array> {
    let offset = 0;
    while (offset < bytes.length) {
      const take = Math.min(this.partSize - this.filled, bytes.length - offset);
      this.buffer.set(bytes.subarray(offset, offset + take), this.filled);
      this.filled += take;
      offset += take;
      if (this.filled === this.partSize) {
        yield this.buffer;
        this.buffer = new Uint8Array(this.partSize);
        this.filled = 0;
      }
    }
  }
  rest(): Uint8Array {
    return this.buffer.subarray(0, this.filled);
  }
}

export async function streamUpload(env: Bindings, org: Organization, request: Request): Promise<Image> {
  const boundary = boundaryOf(request.headers.get("Content-Type"));
  if (!boundary || !request.body) {
    throw new HttpError(422, [{ loc: ["body", "file"], msg: "Field required: send multipart/form-data with a part named 'file'", type: "missing" }]);
  }
  const maxBytes = settings(env).maxUploadBytes;
  let image: Image | null = null;
  let upload: R2MultipartUpload | null = null;
  try {
    let inFile = false;
    let size = 0;
    let head: Uint8Array | null = null;
    const parts: R2UploadedPart[] = [];
    const buffer = new PartBuffer(STREAM_PART_SIZE);
    // The file's SHA-256 as it streams through, so the same file can be found again (GET /images?sha256=).
    const digest = new crypto.DigestStream("SHA-256");
    const hashing = digest.getWriter();
    for await (const event of readMultipart(request.body, boundary, ["file"])) {
      if (event.type === "part") {
        inFile = event.name === "file";
        if (inFile) {
          const { file } = parseOrReject(streamedFileName, { file: { filename: event.filename || "upload" } }, "body");
          image = await reserveImage(env, org, file.filename, null);
          upload = await env.BUCKET.createMultipartUpload(image.r2Key);
          // Recorded before any byte is stored: if this request dies where no catch runs (the
          // client hangs up, the isolate is killed), the storage sweeper finds the upload and aborts it.
          image = await updateImage(env.DB, image.id, { uploadId: upload.uploadId });
        }
      } else if (event.type === "data" && inFile) {
        if (!head) {
          head = event.bytes.slice(0, SNIFF_BYTES);
          // Refuse what is plainly not an image before storing any of it, naming what it is.
          if (head.length >= SNIFF_BYTES && !sniffImageFormat(head)) throw new ImageDecodeError(unsupportedFileMessage(head), "unsupported");
        }
        size += event.bytes.length;
        if (size > maxBytes) throw new HttpError(413, `File is larger than the ${maxBytes} bytes an upload may have`);
        await hashing.write(event.bytes);
        for (const part of buffer.push(event.bytes)) {
          parts.push(await upload!.uploadPart(parts.length + 1, part));
          // A sign of life for the sweeper, which gives up streams that store nothing for a while.
          await updateImage(env.DB, image!.id, {});
        }
      } else if (event.type === "end") {
        inFile = false;
      }
    }
    if (!image || !upload) throw new HttpError(422, [{ loc: ["body", "file"], msg: "Field required", type: "missing" }]);
    if (size === 0) throw new HttpError(422, "The uploaded file is empty");
    const rest = buffer.rest();
    if (rest.length > 0 || parts.length === 0) parts.push(await upload.uploadPart(parts.length + 1, rest));
    await upload.complete(parts);
    upload = null;
    await hashing.close();
    image = await updateImage(env.DB, image.id, { sha256: hex(await digest.digest) });
    return await recordProbe(env, image, await probeStoredObject(env.BUCKET, image.r2Key, size), size);
  } catch (error) {
    // Whatever went wrong, leave no record and no bytes behind.
    if (upload) await upload.abort().catch(() => undefined);
    if (image) await deleteImage(env, image).catch((e) => console.error("cleanup after failed upload", e));
    if (error instanceof ImageDecodeError) throw probeFailure(error);
    throw error;
  }
}

export async function startResumableUpload(env: Bindings, org: Organization, origin: string, file: { name: string; size: number; sha256: string | null }) {
  const { name, size } = file;
  const maxBytes = Math.min(settings(env).maxUploadBytes, MAX_RESUMABLE_SIZE);
  if (size > maxBytes) throw new HttpError(413, `File is larger than the ${maxBytes} bytes an upload may have`);
  const partSize = partSizeFor(size);
  const partCount = Math.max(1, Math.ceil(size / partSize));
  let image = await reserveImage(env, org, name, size);
  try {
    const upload = await env.BUCKET.createMultipartUpload(image.r2Key);
    image = await updateImage(env.DB, image.id, { uploadId: upload.uploadId, partSize, partCount, sha256: file.sha256 });
  } catch (error) {
    await deleteImage(env, image);
    throw error;
  }
  return { image, upload: { part_size: partSize, part_count: partCount, urls: await partUrls(env, origin, image) } };
}

export async function partUrls(env: Bindings, origin: string, image: Image) {
  const urls = [];
  for (let number = 1; number <= (image.partCount ?? 0); number++) {
    const url = await signStorageUrl(env, origin, { method: "PUT", key: image.r2Key, part: { uploadId: image.uploadId!, number, imageId: image.id } });
    urls.push({ part_number: number, url });
  }
  return urls;
}

function expectedPartSize(image: Image, number: number): number {
  const partSize = image.partSize!;
  return number < image.partCount! ? partSize : image.size! - partSize * (image.partCount! - 1);
}

/** Stores one part PUT through the worker's signed URL; repeating a PUT replaces that part. */
export async function receivePart(env: Bindings, imageId: string, uploadId: string, number: number, request: Request): Promise<{ etag: string; size: number }> {
  const [image] = await database(env.DB).select().from(images).where(eq(images.id, imageId)).limit(1);
  if (!image || image.uploadId !== uploadId || image.status !== "pending")
    throw new HttpError(404, "This upload no longer accepts parts (completed, aborted or deleted)");
  if (!Number.isInteger(number) || number < 1 || number > (image.partCount ?? 0))
    throw new HttpError(400, `Part number ${number} is outside 1..${image.partCount}`);
  const length = Number(request.headers.get("Content-Length"));
  if (!request.body || !Number.isFinite(length)) throw new HttpError(411, "A part PUT needs a Content-Length");
  const expected = expectedPartSize(image, number);
  if (length !== expected) throw new HttpError(400, `Part ${number} must be ${expected} bytes, got ${length}`);
  const part = await env.BUCKET.resumeMultipartUpload(image.r2Key, uploadId).uploadPart(number, request.body);
  await database(env.DB)
    .insert(uploadParts)
    .values({ imageId, partNumber: number, size: length, etag: part.etag })
    .onConflictDoUpdate({ target: [uploadParts.imageId, uploadParts.partNumber], set: { size: length, etag: part.etag } });
  return { etag: part.etag, size: length };
}

async function receivedParts(env: Bindings, image: Image): Promise<{ partNumber: number; etag: string; size: number }[]> {
  if (env.SIGNED_URL_MODE === "r2") return listR2Parts(env, image.r2Key, image.uploadId!);
  return database(env.DB).select().from(uploadParts).where(eq(uploadParts.imageId, image.id));
}

export async function completeResumableUpload(env: Bindings, image: Image): Promise<Image> {
  if (image.status !== "pending" || !image.uploadId) {
    throw new HttpError(409, `Upload ${image.id} is ${image.status}; only a pending upload can be completed`);
  }
  const parts = new Map((await receivedParts(env, image)).map((p) => [p.partNumber, p]));
  const missing: number[] = [];
  const wrong: string[] = [];
  for (let number = 1; number <= image.partCount!; number++) {
    const part = parts.get(number);
    if (!part) missing.push(number);
    else if (part.size !== expectedPartSize(image, number)) wrong.push(`part ${number} has ${part.size} bytes, expected ${expectedPartSize(image, number)}`);
  }
  if (missing.length || wrong.length) {
    const problems = [missing.length ? `missing parts ${missing.join(", ")}` : "", ...wrong].filter(Boolean);
    throw new HttpError(400, `Upload ${image.id} is incomplete: ${problems.join("; ")}. PUT those parts, then complete again.`);
  }
  // Claim the completion first so a second, simultaneous complete cannot run it twice.
  const [claimed] = await database(env.DB)
    .update(images)
    .set({ status: "processing", updatedAt: Date.now() })
    .where(and(eq(images.id, image.id), eq(images.status, "pending")))
    .returning();
  if (!claimed) throw new HttpError(409, `Upload ${image.id} is already being completed`);
  try {
    const ordered = [...parts.values()].sort((a, b) => a.partNumber - b.partNumber).map((p) => ({ partNumber: p.partNumber, etag: p.etag }));
    await env.BUCKET.resumeMultipartUpload(image.r2Key, image.uploadId).complete(ordered);
  } catch (error) {
    await updateImage(env.DB, image.id, { status: "pending" });
    throw error;
  }
  await database(env.DB).delete(uploadParts).where(eq(uploadParts.imageId, image.id));
  const processing = await updateImage(env.DB, image.id, { uploadId: null });
  await createConversionJob(env, image.orgId, image.id);
  return processing;
}

export async function abortUpload(env: Bindings, image: Image): Promise<Image> {
  if (image.status !== "pending") throw new HttpError(409, `Upload ${image.id} is ${image.status}; only a pending upload can be aborted`);
  if (image.uploadId)
    await env.BUCKET.resumeMultipartUpload(image.r2Key, image.uploadId)
      .abort()
      .catch(() => undefined);
  await database(env.DB).delete(uploadParts).where(eq(uploadParts.imageId, image.id));
  return updateImage(env.DB, image.id, { status: "failed", uploadId: null, uploadError: "Upload aborted by the client" });
}

/** The conversion job's work: probe the stored file and mark the image ready or failed. */
export async function probeStoredImage(env: Bindings, image: Image): Promise<Image> {
  const object = await env.BUCKET.head(image.r2Key);
  if (!object) return updateImage(env.DB, image.id, { status: "failed", uploadError: "The uploaded bytes are missing from storage" });
  try {
    return await recordProbe(env, image, await probeStoredObject(env.BUCKET, image.r2Key, object.size), object.size);
  } catch (error) {
    if (!(error instanceof ImageDecodeError)) throw error;
    // Keep the record (the user needs to see why) but not bytes no one can use.
    await env.BUCKET.delete(image.r2Key);
    return updateImage(env.DB, image.id, { status: "failed", uploadError: error.message });
  }
}
