// Getting one file into the service. Small files go in one call (multipart POST /upload), big ones
// resumably (JSON POST /upload, one PUT per part to its signed URL, complete, wait for the
// conversion). A part that fails is retried alone, with backoff; a part refused because its signed
// URL expired is retried once with fresh URLs. Parts already sent are reported through `onState`,
// so an interrupted upload resumes where it stopped. A file the organization has uploaded before
// (the same SHA-256) is not sent again: its image is used.
import { createHash } from "node:crypto";
import { createReadStream, openAsBlob } from "node:fs";
import { open } from "node:fs/promises";
import type { ImageRecord } from "../schema/api-records.ts";
import { SNIFF_BYTES, sniffImageFormat, unsupportedFileMessage } from "../schema/image-formats/index.ts";
import { sleep } from "../common/retry.ts";
import { MULTIPART_OVERHEAD } from "./body-limit.ts";
import { ApiError, type Http } from "./http.ts";

interface LocalFile {
  path: string;
  /** The name the service records (the file's base name). */
  name: string;
  size: number;
}

/** What an upload has done so far, kept in the resume state. */
interface UploadState {
  image_id?: string;
  parts_done?: number[];
}

interface UploadOptions {
  /** Files larger than this go resumable. */
  resumableAbove: number;
  /** The largest request body the route to the API accepts (Cloudflare's zone limit). */
  bodyLimit: number;
  partConcurrency?: number;
  pollMs?: number;
  /** Bytes sent (negative when a failed attempt's bytes are taken back). */
  onBytes?: (delta: number) => void;
  onState?: (state: UploadState) => void;
  onPhase?: (phase: string) => void;
  /** Called before each new request of the upload; throws to stop it there (see interruption.ts). */
  checkpoint?: () => void;
  /** Called instead of uploading when the organization has this file (same SHA-256) already, with that image. */
  onAlreadyUploaded?: (image: ImageRecord) => void;
}

// Exported for its test only (test/client/segment-cli.test.ts).
export class UploadFailedError extends Error {}

interface PartPlan {
  part_size: number;
  part_count: number;
  urls: { part_number: number; url: string }[];
}

type UploadAnswer = ImageRecord & { upload: PartPlan | null };

/** Counts the bytes a body stream hands to fetch; `taken back` if the attempt fails. */
function counted(stream: ReadableStream<Uint8Array>, onBytes: (delta: number) => void): ReadableStream<Uint8Array> {
  return stream.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        onBytes(chunk.length);
        controller.enqueue(chunk);
      },
    }),
  );
}

/**
 * A fresh counted body per attempt (`build`); each attempt first takes back the bytes of the one
 * before, and `takeBack` does so after a final failure, so progress never counts a byte twice.
 */
function attempts(blob: () => Blob, onBytes: (delta: number) => void, headers: Record<string, string>) {
  let sent = 0;
  const takeBack = () => {
    if (sent > 0) onBytes(-sent);
    sent = 0;
  };
  const build = () => {
    takeBack();
    const body = blob();
    return {
      body: counted(body.stream(), (n) => {
        sent += n;
        onBytes(n);
      }),
      headers: { ...headers, "Content-Length": String(body.size) },
    };
  };
  return { build, takeBack };
}

/** Quotes a file name for a Content-Disposition header. */
const quoted = (name: string) => name.replace(/[\r\n"\\]/g, "_");

async function oneCall(http: Http, file: LocalFile, options: UploadOptions): Promise<ImageRecord> {
  const boundary = `cellseg-${crypto.randomUUID()}`;
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${quoted(file.name)}"\r\nContent-Type: application/octet-stream\r\n\r\n`;
  const contents = await openAsBlob(file.path);
  // Progress counts the file's bytes, not the multipart envelope around them.
  const envelope = new TextEncoder().encode(head).length;
  let raw = 0;
  let reported = 0;
  const onBytes = (n: number) => {
    raw += n;
    const now = Math.max(0, Math.min(file.size, raw - envelope));
    options.onBytes?.(now - reported);
    reported = now;
  };
  const body = attempts(() => new Blob([head, contents, `\r\n--${boundary}--\r\n`]), onBytes, {
    "Content-Type": `multipart/form-data; boundary=${boundary}`,
  });
  const { image } = await http.json<{ image: ImageRecord }>("POST", "/upload", { body: body.build }).catch((error) => {
    body.takeBack();
    throw error;
  });
  options.onState?.({ image_id: image.id });
  return image;
}

async function putParts(http: Http, file: LocalFile, imageId: string, plan: PartPlan, done: Set<number>, options: UploadOptions): Promise<void> {
  const contents = await openAsBlob(file.path);
  let urls = plan.urls;
  const queue = urls.map((u) => u.part_number).filter((n) => !done.has(n));
  const putOne = async (number: number, refreshed = false): Promise<void> => {
    options.checkpoint?.();
    const start = (number - 1) * plan.part_size;
    const body = attempts(
      () => contents.slice(start, Math.min(start + plan.part_size, file.size)),
      (n) => options.onBytes?.(n),
      {},
    );
    const url = urls.find((u) => u.part_number === number)!.url;
    try {
      await http.request("PUT", url, { signed: true, body: body.build });
    } catch (error) {
      body.takeBack();
      // Signed URLs expire (15 minutes): a slow upload asks for fresh ones and tries that part again.
      if (!(error instanceof ApiError) || error.status !== 403 || refreshed) throw error;
      urls = (await http.json<UploadAnswer>("GET", `/upload/${imageId}`)).upload?.urls ?? urls;
      return putOne(number, true);
    }
    done.add(number);
    options.onState?.({ image_id: imageId, parts_done: [...done].sort((a, b) => a - b) });
  };
  const lanes = Array.from({ length: Math.min(options.partConcurrency ?? 3, queue.length) }, async () => {
    for (let next = queue.shift(); next !== undefined; next = queue.shift()) await putOne(next);
  });
  await Promise.all(lanes);
}

function checkPartSize(http: Http, plan: PartPlan, bodyLimit: number): string | null {
  // Parts PUT to the API's own address pass through the zone and its body limit; R2's presigned
  // addresses do not.
  const throughZone = plan.urls.some((u) => new URL(u.url).origin === http.origin);
  if (throughZone && plan.part_size > bodyLimit) {
    return `the service plans parts of ${plan.part_size} bytes, more than the ${bodyLimit} bytes a request may carry here`;
  }
  return null;
}

async function waitUntilConverted(http: Http, imageId: string, pollMs: number): Promise<ImageRecord> {
  for (;;) {
    const image = await http.json<UploadAnswer>("GET", `/upload/${imageId}`);
    if (image.upload_status === "ready") return image;
    if (image.upload_status === "failed") throw new UploadFailedError(image.upload_error ?? "the upload failed");
    await sleep(pollMs);
  }
}

async function resumable(
  http: Http,
  file: LocalFile,
  options: UploadOptions,
  sha256: string | undefined,
  resumeFrom?: UploadAnswer,
  partsDone: number[] = [],
): Promise<ImageRecord> {
  let imageId: string;
  let plan: PartPlan;
  if (resumeFrom?.upload) {
    imageId = resumeFrom.id;
    plan = resumeFrom.upload;
  } else {
    const started = await http.json<{ image: ImageRecord; upload: PartPlan }>("POST", "/upload", { json: { name: file.name, size: file.size, sha256 } });
    imageId = started.image.id;
    plan = started.upload;
    partsDone = [];
    options.onState?.({ image_id: imageId, parts_done: [] });
  }
  const tooBig = checkPartSize(http, plan, options.bodyLimit);
  if (tooBig) {
    await http.request("DELETE", `/upload/${imageId}`);
    throw new UploadFailedError(`${tooBig}; raise the zone's Maximum Upload Size or lower MAX_UPLOAD_BYTES`);
  }
  const done = new Set(partsDone.filter((n) => n >= 1 && n <= plan.part_count));
  const sentBefore = [...done].reduce((sum, n) => sum + Math.min(plan.part_size, file.size - (n - 1) * plan.part_size), 0);
  if (sentBefore > 0) options.onBytes?.(sentBefore);
  options.onPhase?.("uploading parts");
  await putParts(http, file, imageId, plan, done, options);
  options.checkpoint?.();
  try {
    await http.request("POST", `/upload/${imageId}/complete`);
  } catch (error) {
    // The service checks the parts itself; if any it lacks were recorded as sent, send them all again.
    if (!(error instanceof ApiError) || error.status !== 400) throw error;
    options.onBytes?.(-file.size);
    done.clear();
    const fresh = (await http.json<UploadAnswer>("GET", `/upload/${imageId}`)).upload ?? plan;
    await putParts(http, file, imageId, fresh, done, options);
    await http.request("POST", `/upload/${imageId}/complete`);
  }
  options.onPhase?.("converting");
  return waitUntilConverted(http, imageId, options.pollMs ?? 1000);
}

/** The file's SHA-256 as lowercase hex, read as a stream. */
async function fileSha256(path: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

/**
 * Refuses, before a byte is sent, a file whose signature the service refuses at its first bytes,
 * in the service's own words (schema/image-formats/sniff.ts): the service answers a one-call upload
 * as soon as it has seen them, while the rest of a large file is still being sent, and that early
 * answer reaches fetch as a connection cut ("terminated"), not as the refusal.
 */
async function refuseUnreadFormat(file: LocalFile): Promise<void> {
  const handle = await open(file.path, "r");
  try {
    const head = new Uint8Array(Math.min(SNIFF_BYTES, file.size));
    await handle.read(head, 0, head.length, 0);
    if (head.length > 0 && !sniffImageFormat(head)) throw new UploadFailedError(unsupportedFileMessage(head));
  } finally {
    await handle.close();
  }
}

/**
 * Uploads `file`, or finishes the upload `previous` describes if the service still has it. Answers
 * the image record once it is ready; throws UploadFailedError if the service refuses the file.
 */
export async function uploadImage(http: Http, file: LocalFile, options: UploadOptions, previous: UploadState = {}): Promise<ImageRecord> {
  if (previous.image_id) {
    const known = await http.json<UploadAnswer>("GET", `/upload/${previous.image_id}`).catch((error) => {
      if (error instanceof ApiError && error.status === 404) return null;
      throw error;
    });
    if (known?.upload_status === "ready") {
      options.onBytes?.(file.size);
      return known;
    }
    if (known?.upload_status === "processing") return waitUntilConverted(http, known.id, options.pollMs ?? 1000);
    if (known?.upload_status === "pending" && known.upload) return resumable(http, file, options, undefined, known, previous.parts_done);
    // Failed (or gone): free its storage slot and start over.
    if (known) await http.request("DELETE", `/upload/${known.id}`);
  }
  await refuseUnreadFormat(file);
  options.onPhase?.("hashing");
  const sha256 = await fileSha256(file.path);
  const [uploaded] = (await http.json<{ items: ImageRecord[] }>("GET", "/images", { query: { sha256, upload_status: "ready", limit: "1" } })).items;
  if (uploaded) {
    options.onAlreadyUploaded?.(uploaded);
    options.onBytes?.(file.size);
    return uploaded;
  }
  const oneCallFits = file.size <= options.resumableAbove && file.size + MULTIPART_OVERHEAD <= options.bodyLimit;
  try {
    // The one-call upload's SHA-256 is computed by the service as the bytes arrive; a resumable one's parts go straight to storage, so it is declared.
    return oneCallFits ? await oneCall(http, file, options) : await resumable(http, file, options, sha256);
  } catch (error) {
    // The service refused the file itself (not an image, damaged, too big): that is this file's end.
    if (error instanceof ApiError && [413, 415, 422].includes(error.status)) throw new UploadFailedError(error.detail);
    throw error;
  }
}
