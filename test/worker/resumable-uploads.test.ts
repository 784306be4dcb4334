import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, createOrg, json, type TestOrg, tiffBytes } from "./helpers.ts";

const MiB = 1024 * 1024;

interface Started {
  image: { id: string; upload_status: string; name: string };
  upload: { part_size: number; part_count: number; urls: { part_number: number; url: string }[] };
}

/** A real TIFF padded to `size` bytes: image data first, then filler the TIFF does not reference. */
function bigTiff(size: number): Uint8Array {
  const tiff = tiffBytes(16, 16);
  const out = new Uint8Array(size);
  out.set(tiff);
  for (let i = tiff.length; i < size; i++) out[i] = i % 251;
  return out;
}

async function sha256(bytes: Uint8Array): Promise<string> {
  return [...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))].map((b) => b.toString(16).padStart(2, "0")).join("");
}

async function start(org: TestOrg, name: string, size: number): Promise<Started> {
  const response = await call("/upload", { key: org.key, json: { name, size } });
  expect(response.status).toBe(201);
  return json<Started>(response);
}

function putPart(url: string, bytes: Uint8Array): Promise<Response> {
  // Part PUTs carry no Authorization header: the signature in the URL is the credential.
  return call(url, { method: "PUT", body: bytes, headers: { "Content-Length": String(bytes.length) } });
}

async function waitForStatus(org: TestOrg, id: string, done: (status: string) => boolean): Promise<Record<string, unknown>> {
  for (let i = 0; i < 100; i++) {
    const image = await json(await call(`/upload/${id}`, { key: org.key }));
    if (done(image.upload_status as string)) return image;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("image never left processing");
}

describe("resumable upload (JSON + signed part URLs)", () => {
  it("hands out equal parts of at least 5 MiB, takes a retried part, and ends ready after the conversion", async () => {
    const org = await createOrg();
    const size = 17 * MiB + 123;
    const file = bigTiff(size);
    const { image, upload } = await start(org, "big.tif", size);
    expect(image.upload_status).toBe("pending");
    expect(upload.part_size).toBeGreaterThanOrEqual(5 * MiB);
    expect(upload.urls).toHaveLength(Math.ceil(size / upload.part_size));

    const slice = (n: number) => file.slice((n - 1) * upload.part_size, Math.min(size, n * upload.part_size));
    for (const { part_number, url } of upload.urls) expect((await putPart(url, slice(part_number))).status).toBe(200);
    // A client that lost the answer repeats a PUT: it replaces the part.
    expect((await putPart(upload.urls[1]!.url, slice(2))).status).toBe(200);

    const completed = await call(`/upload/${image.id}/complete`, { key: org.key, method: "POST" });
    expect(completed.status).toBe(202);
    expect(await json(completed)).toMatchObject({ status: "processing" });
    const ready = await waitForStatus(org, image.id, (s) => s !== "processing");
    expect(ready).toMatchObject({ upload_status: "ready", upload_error: null, format: "tiff", width: 16, height: 16, size });
    const stored = await env.BUCKET.get(`orgs/${org.id}/images/${image.id}/original`);
    expect(await sha256(new Uint8Array(await stored!.arrayBuffer()))).toBe(await sha256(file));
  });

  it("names missing and wrong-sized parts with 400, and stays completable once they arrive", async () => {
    const org = await createOrg();
    const size = 12 * MiB;
    const file = bigTiff(size);
    const { image, upload } = await start(org, "a.tif", size);
    const slice = (n: number) => file.slice((n - 1) * upload.part_size, Math.min(size, n * upload.part_size));
    expect(upload.urls).toHaveLength(2); // 12 MiB in 8 MiB parts
    expect((await putPart(upload.urls[0]!.url, slice(1))).status).toBe(200);

    const incomplete = await call(`/upload/${image.id}/complete`, { key: org.key, method: "POST" });
    expect(incomplete.status).toBe(400);
    expect((await json(incomplete)).detail).toMatch(/missing parts 2\b/);

    // A wrong-sized PUT is refused at the door; the part is still missing afterwards.
    expect((await putPart(upload.urls[1]!.url, new Uint8Array(10))).status).toBe(400);
    expect((await putPart(upload.urls[1]!.url, slice(2))).status).toBe(200);
    expect((await call(`/upload/${image.id}/complete`, { key: org.key, method: "POST" })).status).toBe(202);
    expect(await waitForStatus(org, image.id, (s) => s !== "processing")).toMatchObject({ upload_status: "ready" });
  });

  it("marks a completed upload that is not an image as failed with upload_error, keeping no bytes", async () => {
    const org = await createOrg();
    const junk = new Uint8Array(6 * MiB).fill(7);
    const { image, upload } = await start(org, "junk.tif", junk.length);
    const slice = (n: number) => junk.slice((n - 1) * upload.part_size, n * upload.part_size);
    for (const { part_number, url } of upload.urls) await putPart(url, slice(part_number));
    expect((await call(`/upload/${image.id}/complete`, { key: org.key, method: "POST" })).status).toBe(202);
    const failed = await waitForStatus(org, image.id, (s) => s !== "processing");
    expect(failed.upload_status).toBe("failed");
    expect(failed.upload_error).toMatch(/not a supported image/);
    expect((await env.BUCKET.list({ prefix: `orgs/${org.id}/` })).objects).toHaveLength(0);
  });

  it("DELETE /upload/{id} of an upload in flight discards its parts, its record and its storage slot", async () => {
    const org = await createOrg({ storageCap: 1 });
    const { image, upload } = await start(org, "gone.tif", 6 * MiB);
    await putPart(upload.urls[0]!.url, bigTiff(6 * MiB).slice(0, upload.part_size)); // every upload has a first part
    expect((await call(`/upload/${image.id}`, { key: org.key, method: "DELETE" })).status).toBe(204);
    expect((await call(`/upload/${image.id}`, { key: org.key })).status).toBe(404);
    // The deleted upload's URLs no longer accept parts.
    expect((await putPart(upload.urls[0]!.url, new Uint8Array(upload.part_size))).status).toBe(404);
    // The slot is free again.
    expect((await call("/upload", { key: org.key, json: { name: "next.tif", size: 100 } })).status).toBe(201);
    expect((await env.BUCKET.list({ prefix: `orgs/${org.id}/` })).objects).toHaveLength(0);
  });

  it("POST /upload/{id}/abort discards the chunks and marks the upload failed", async () => {
    const org = await createOrg();
    const { image, upload } = await start(org, "stop.tif", 6 * MiB);
    await putPart(upload.urls[0]!.url, new Uint8Array(upload.part_size)); // every upload has a first part
    const aborted = await call(`/upload/${image.id}/abort`, { key: org.key, method: "POST" });
    expect(aborted.status).toBe(200);
    expect(await json(aborted)).toMatchObject({ upload_status: "failed", upload_error: "Upload aborted by the client" });
    expect((await call(`/upload/${image.id}/complete`, { key: org.key, method: "POST" })).status).toBe(409);
  });

  it("refuses a tampered, expired or misused part URL with 403", async () => {
    const org = await createOrg();
    const { upload } = await start(org, "x.tif", 100);
    const url = new URL(upload.urls[0]!.url); // every upload has a first part
    const tampered = new URL(url);
    tampered.searchParams.set("part", "2");
    expect((await putPart(tampered.toString(), new Uint8Array(100))).status).toBe(403);
    const expired = new URL(url);
    expired.searchParams.set("expires", "1000");
    expect((await putPart(expired.toString(), new Uint8Array(100))).status).toBe(403);
    // A PUT URL cannot be used to read.
    expect((await call(url.toString())).status).toBe(403);
    const garbled = new URL(url);
    garbled.pathname += "%E0%A4%A";
    expect((await putPart(garbled.toString(), new Uint8Array(100))).status).toBe(403);
  });

  it("validates the JSON body in the 422 shape", async () => {
    const org = await createOrg();
    const response = await call("/upload", { key: org.key, json: { name: "", size: -1 } });
    expect(response.status).toBe(422);
    const { detail } = await json<{ detail: { loc: string[]; type: string }[] }>(response);
    expect(detail.map((d) => d.loc)).toEqual([
      ["body", "name"],
      ["body", "size"],
    ]);
  });
});
