// Expiring URLs that let a client or runner read or write one R2 object (or one part of a
// multipart upload) without an API key.
//  - mode "worker": the URL points back to this worker (/api/v1/storage/<key>) and carries its
//    role (an object, an upload's part, a job's output), method, key, expiry and part or lease in
//    an HMAC-SHA256 signature (fields length-prefixed, so none can be read as another), checked in
//    constant time before any byte is streamed to or from R2.
//  - mode "r2": an S3 presigned URL (SigV4, via aws4fetch) straight to R2, for deployments with R2
//    access keys; the worker is then out of the data path.
// A job's output URL names the lease it was signed for (its id, leaseIdOf: every lease has its own,
// even when a withdrawn attempt's number is given out again); in mode "worker" a PUT through it is
// refused once that lease is no longer the job's live one (mode "r2" cannot check: there a late
// attempt is stopped by the lease checks on its URL refresh and its completion only).
import { AwsClient } from "aws4fetch";
import type { Bindings } from "../env.ts";
import { HttpError } from "../errors.ts";
import { constantTimeEqual, hmacSha256Hex } from "./crypto.ts";
import { settings } from "./settings.ts";

export interface StorageTarget {
  method: "GET" | "PUT";
  key: string;
  /** A part of a multipart upload, for resumable image uploads. */
  part?: { uploadId: string; number: number; imageId: string };
  /** A job's output: written only while this lease (leaseIdOf) is the job's live one. */
  lease?: { jobId: string; id: string };
}

const STORAGE_PATH = "/api/v1/storage/";

/** What a URL is for: one object, a part of a resumable upload, or a job lease's output. */
type SignedRole = "object" | "upload-part" | "job-output";

function roleOf(target: StorageTarget): SignedRole {
  if (target.part && target.lease) throw new Error("a signed URL is for an upload's part or a job's output, not both");
  return target.part ? "upload-part" : target.lease ? "job-output" : "object";
}

/**
 * The string an HMAC signs: a version, the URL's role, then its fields, each prefixed by its
 * length. With the role and the lengths no URL's string is another's: joined by a separator, a
 * job output's (job, attempt) once read as an upload part's (empty image, upload, number), so only
 * a database lookup stopped one from being used as the other.
 */
function canonical(target: StorageTarget, expires: number): string {
  const fields: (string | number)[] = ["cellseg-storage-v3", roleOf(target), target.method, target.key, expires];
  if (target.part) fields.push(target.part.imageId, target.part.uploadId, target.part.number);
  if (target.lease) fields.push(target.lease.jobId, target.lease.id);
  return fields.map((field) => `${String(field).length}:${field}`).join("");
}

export function encodeKeyPath(key: string): string {
  return key.split("/").map(encodeURIComponent).join("/");
}

function r2Client(env: Bindings): { client: AwsClient; base: string } {
  if (!env.R2_ACCOUNT_ID || !env.R2_BUCKET_NAME || !env.R2_ACCESS_KEY_ID || !env.R2_SECRET_ACCESS_KEY) {
    throw new Error("SIGNED_URL_MODE=r2 needs R2_ACCOUNT_ID, R2_BUCKET_NAME, R2_ACCESS_KEY_ID and R2_SECRET_ACCESS_KEY");
  }
  return {
    client: new AwsClient({ accessKeyId: env.R2_ACCESS_KEY_ID, secretAccessKey: env.R2_SECRET_ACCESS_KEY, service: "s3", region: "auto" }),
    base: `https://${env.R2_ACCOUNT_ID}.r2.cloudflarestorage.com/${env.R2_BUCKET_NAME}/`,
  };
}

export async function signStorageUrl(env: Bindings, origin: string, target: StorageTarget): Promise<string> {
  const ttl = settings(env).signedUrlSeconds;
  if (env.SIGNED_URL_MODE === "r2") {
    const { client, base } = r2Client(env);
    const url = new URL(base + encodeKeyPath(target.key));
    if (target.part) {
      url.searchParams.set("partNumber", String(target.part.number));
      url.searchParams.set("uploadId", target.part.uploadId);
    }
    url.searchParams.set("X-Amz-Expires", String(ttl));
    const signed = await client.sign(url.toString(), { method: target.method, aws: { signQuery: true } });
    return signed.url;
  }
  const expires = Math.floor(Date.now() / 1000) + ttl;
  const url = new URL(STORAGE_PATH + encodeKeyPath(target.key), origin);
  url.searchParams.set("method", target.method);
  url.searchParams.set("expires", String(expires));
  if (target.part) {
    url.searchParams.set("image", target.part.imageId);
    url.searchParams.set("upload", target.part.uploadId);
    url.searchParams.set("part", String(target.part.number));
  }
  if (target.lease) {
    url.searchParams.set("job", target.lease.jobId);
    url.searchParams.set("lease", target.lease.id);
  }
  url.searchParams.set("sig", await hmacSha256Hex(env.SIGNING_KEY, canonical(target, expires)));
  return url.toString();
}

/** The target a worker-mode URL grants, or 403 when its signature, method or expiry is off. */
export async function verifyStorageUrl(env: Bindings, request: Request): Promise<StorageTarget> {
  const url = new URL(request.url);
  const denied = (why: string) => new HttpError(403, `Invalid signed URL: ${why}`);
  const method = request.method === "HEAD" ? "GET" : request.method;
  if (method !== "GET" && method !== "PUT") throw new HttpError(405, "Signed URLs accept GET and PUT only");
  let key: string;
  try {
    key = url.pathname.slice(STORAGE_PATH.length).split("/").map(decodeURIComponent).join("/");
  } catch {
    throw denied("malformed object key");
  }
  const expires = Number(url.searchParams.get("expires"));
  const signature = url.searchParams.get("sig") ?? "";
  const partNumber = url.searchParams.get("part");
  const lease = url.searchParams.get("lease");
  if (partNumber !== null && lease !== null) throw denied("names both an upload part and a job lease");
  const target: StorageTarget = {
    method,
    key,
    ...(partNumber !== null && {
      part: { imageId: url.searchParams.get("image") ?? "", uploadId: url.searchParams.get("upload") ?? "", number: Number(partNumber) },
    }),
    ...(lease !== null && { lease: { jobId: url.searchParams.get("job") ?? "", id: lease } }),
  };
  // Check the signature before anything else so nothing about the request is trusted unsigned.
  const expected = await hmacSha256Hex(env.SIGNING_KEY, canonical(target, expires));
  if (!(await constantTimeEqual(expected, signature))) throw denied("signature does not match");
  if (url.searchParams.get("method") !== method) throw denied(`signed for ${url.searchParams.get("method")}, used with ${method}`);
  if (!Number.isFinite(expires) || expires * 1000 < Date.now()) throw denied("expired");
  return target;
}
