// Signed-URL reads and writes (SIGNED_URL_MODE = "worker"). The signature is the credential:
// no Authorization header is needed or read here.
import { Hono } from "hono";
import type { AppEnv } from "../env.ts";
import { HttpError } from "../errors.ts";
import { leaseIsLive } from "../services/jobs.ts";
import { verifyStorageUrl } from "../services/signed-urls.ts";
import { receivePart } from "../services/uploads.ts";

export const storage = new Hono<AppEnv>();

/**
 * The byte range a GET asks for (RFC 9110 §14.1.2), or undefined for the whole object. A range no
 * byte of the object can satisfy is a 416 that names the object's size: a start past the end, an
 * inverted range, a suffix of zero bytes (`bytes=-0`), or any range of an empty object.
 */
function parseRange(header: string | undefined, size: number): { offset: number; length: number } | undefined {
  const match = header ? /^bytes=(\d*)-(\d*)$/.exec(header.trim()) : null;
  if (!match || (match[1] === "" && match[2] === "")) return undefined;
  const unsatisfiable = () => new HttpError(416, `Range ${header} is outside the object's ${size} bytes`, { "Content-Range": `bytes */${size}` });
  if (match[1] === "") {
    const length = Math.min(Number(match[2]), size);
    if (length === 0) throw unsatisfiable();
    return { offset: size - length, length };
  }
  const offset = Number(match[1]);
  const end = match[2] === "" ? size - 1 : Math.min(Number(match[2]), size - 1);
  if (offset > end) throw unsatisfiable();
  return { offset, length: end - offset + 1 };
}

storage.on(["GET", "HEAD", "PUT"], "/*", async (c) => {
  const target = await verifyStorageUrl(c.env, c.req.raw);
  if (target.method === "GET") {
    const head = await c.env.BUCKET.head(target.key);
    if (!head) throw new HttpError(404, "Object not found");
    const range = parseRange(c.req.header("Range"), head.size);
    const object = await c.env.BUCKET.get(target.key, range ? { range } : {});
    if (!object) throw new HttpError(404, "Object not found");
    // The bytes are an organization's own upload, served from this origin: never let a browser sniff them into a page.
    const headers = new Headers({
      "Content-Type": "application/octet-stream",
      "X-Content-Type-Options": "nosniff",
      "Accept-Ranges": "bytes",
      ETag: object.httpEtag,
    });
    if (range) {
      headers.set("Content-Range", `bytes ${range.offset}-${range.offset + range.length - 1}/${head.size}`);
      headers.set("Content-Length", String(range.length));
    } else {
      headers.set("Content-Length", String(head.size));
    }
    return new Response(c.req.method === "HEAD" ? null : object.body, { status: range ? 206 : 200, headers });
  }
  if (target.part) {
    const part = await receivePart(c.env, target.part.imageId, target.part.uploadId, target.part.number, c.req.raw);
    return c.json({ part_number: target.part.number, size: part.size }, 200, { ETag: part.etag });
  }
  if (!c.req.raw.body || c.req.header("Content-Length") === undefined) throw new HttpError(411, "A PUT needs a Content-Length");
  // A runner whose lease ran out or was handed back (and whose job may be another lease's now) must not replace what that lease writes.
  if (target.lease && !(await leaseIsLive(c.env.DB, target.lease.jobId, target.lease.id))) {
    throw new HttpError(409, `The lease this URL was signed for no longer holds job ${target.lease.jobId}; nothing was written`);
  }
  const stored = await c.env.BUCKET.put(target.key, c.req.raw.body);
  return c.json({ key: target.key, size: stored?.size ?? 0 }, 200, { ETag: stored?.httpEtag ?? "" });
});
