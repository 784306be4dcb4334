// A signed storage URL (SIGNED_URL_MODE = "worker") is good for the one thing it was signed for:
// its role (an object, an upload's part, a job lease's output) and its fields, length-prefixed,
// are in the signed string. Joined by a separator, a job output's (job, attempt) once read as an
// upload part's (empty image, upload, number), and only a database lookup stopped the swap (#35).
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { signStorageUrl, type StorageTarget, verifyStorageUrl } from "../../worker/services/signed-urls.ts";
import { call, json } from "./helpers.ts";

const ORIGIN = "http://cellseg.test";
const KEY = "orgs/roles/segmentations/s/rois.bin";
const JOB = "job-1234";

/** The URL with its role's query parameters replaced by `params`, signature and expiry kept. */
function relabelled(url: string, params: Record<string, string>): string {
  const next = new URL(url);
  for (const name of ["image", "upload", "part", "job", "lease"]) next.searchParams.delete(name);
  for (const [name, value] of Object.entries(params)) next.searchParams.set(name, value);
  return next.toString();
}

const verified = (url: string, method = "PUT") => verifyStorageUrl(env, new Request(url, { method }));
const MISMATCH = { status: 403, detail: "Invalid signed URL: signature does not match" };

describe("signed URL roles", () => {
  const jobOutput: StorageTarget = { method: "PUT", key: KEY, lease: { jobId: JOB, id: "1" } };
  const uploadPart: StorageTarget = { method: "PUT", key: KEY, part: { imageId: "", uploadId: JOB, number: 1 } };

  it("each URL verifies as what it was signed for", async () => {
    expect(await verified(await signStorageUrl(env, ORIGIN, jobOutput))).toEqual(jobOutput);
    expect(await verified(await signStorageUrl(env, ORIGIN, uploadPart))).toEqual(uploadPart);
  });

  it("a job output's signature does not verify as an upload part's", async () => {
    const url = relabelled(await signStorageUrl(env, ORIGIN, jobOutput), { image: "", upload: JOB, part: "1" });
    await expect(verified(url)).rejects.toMatchObject(MISMATCH);
    // Through the worker, before any database lookup.
    const response = await call(url, { method: "PUT", body: new Uint8Array([1, 2, 3]), headers: { "Content-Length": "3" } });
    expect(response.status).toBe(403);
    expect(await json(response)).toEqual({ detail: MISMATCH.detail });
  });

  it("an upload part's signature does not verify as a job output's", async () => {
    const url = relabelled(await signStorageUrl(env, ORIGIN, uploadPart), { job: JOB, lease: "1" });
    await expect(verified(url)).rejects.toMatchObject(MISMATCH);
  });

  it("neither verifies as a plain object's, nor a plain object's as either", async () => {
    const object: StorageTarget = { method: "PUT", key: KEY };
    for (const target of [jobOutput, uploadPart])
      await expect(verified(relabelled(await signStorageUrl(env, ORIGIN, target), {}))).rejects.toMatchObject(MISMATCH);
    const plain = await signStorageUrl(env, ORIGIN, object);
    await expect(verified(relabelled(plain, { job: "", lease: "0" }))).rejects.toMatchObject(MISMATCH);
    await expect(verified(relabelled(plain, { image: "", upload: "", part: "0" }))).rejects.toMatchObject(MISMATCH);
  });

  it("a URL naming both a part and a lease is refused", async () => {
    const url = new URL(await signStorageUrl(env, ORIGIN, jobOutput));
    url.searchParams.set("part", "1");
    await expect(verified(url.toString())).rejects.toMatchObject({ status: 403, detail: "Invalid signed URL: names both an upload part and a job lease" });
  });
});
