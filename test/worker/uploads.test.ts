import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, createOrg, json, multipartFile, pngBytes, tiffBytes, uploadImage } from "./helpers.ts";

async function storedObjects(prefix: string): Promise<number> {
  return (await env.BUCKET.list({ prefix })).objects.length;
}

async function imageRows(orgId: string): Promise<number> {
  const row = await env.DB.prepare("SELECT count(*) AS n FROM images WHERE org_id = ?").bind(orgId).first<{ n: number }>();
  return row!.n;
}

describe("POST /upload (multipart)", () => {
  it("stores a PNG and answers the ready record with the file's name and probed header", async () => {
    const org = await createOrg();
    const response = await call("/upload", { key: org.key, body: multipartFile("plate 1, well A.png", pngBytes(8, 6)) });
    expect(response.status).toBe(201);
    const { image } = await json<{ image: Record<string, unknown> }>(response);
    expect(image).toMatchObject({ name: "plate 1, well A.png", upload_status: "ready", upload_error: null, format: "png", width: 8, height: 6, channels: 1, bit_depth: 16, planes: 1 });
    expect(await storedObjects(`orgs/${org.id}/images/${image.id}/`)).toBe(1);
  });

  it("probes a 16-bit TIFF", async () => {
    const org = await createOrg();
    const { image } = await json(await call("/upload", { key: org.key, body: multipartFile("stack.tif", tiffBytes(5, 4)) }));
    expect(image).toMatchObject({ upload_status: "ready", format: "tiff", width: 5, height: 4, channels: 1, bit_depth: 16, planes: 1 });
  });

  it("refuses a file that is not an image and leaves no record and no bytes", async () => {
    const org = await createOrg();
    const response = await call("/upload", { key: org.key, body: multipartFile("notes.txt", new TextEncoder().encode("these are not pixels at all")) });
    expect(response.status).toBe(415);
    expect((await json(response)).detail).toMatch(/not a supported image/);
    expect(await imageRows(org.id)).toBe(0);
    expect(await storedObjects(`orgs/${org.id}/`)).toBe(0);
  });

  it("refuses a truncated PNG with 422 naming the problem and leaves nothing behind", async () => {
    const org = await createOrg();
    const truncated = pngBytes(32, 32).slice(0, 60);
    const response = await call("/upload", { key: org.key, body: multipartFile("cut.png", truncated) });
    expect(response.status).toBe(422);
    expect((await json(response)).detail).toMatch(/truncated/);
    expect(await imageRows(org.id)).toBe(0);
    expect(await storedObjects(`orgs/${org.id}/`)).toBe(0);
  });

  it("answers 422 in the validation shape when the file part is missing", async () => {
    const org = await createOrg();
    const form = new FormData();
    form.append("other", "x");
    const response = await call("/upload", { key: org.key, body: form });
    expect(response.status).toBe(422);
    expect((await json(response)).detail).toEqual([expect.objectContaining({ loc: ["body", "file"], type: "missing" })]);
  });
});

describe("POST /upload (multipart) of a file larger than one R2 part", () => {
  it("streams it into several equal parts and stores it byte for byte", async () => {
    const org = await createOrg();
    const tiff = tiffBytes(8, 8);
    const file = new Uint8Array(9 * 1024 * 1024 + 17);
    file.set(tiff);
    for (let i = tiff.length; i < file.length; i++) file[i] = (i * 31) % 256;
    const response = await call("/upload", { key: org.key, body: multipartFile("large.tif", file) });
    expect(response.status).toBe(201);
    const { image } = await json<{ image: Record<string, unknown> }>(response);
    expect(image).toMatchObject({ upload_status: "ready", format: "tiff", size: file.length, width: 8, height: 8 });
    const stored = await env.BUCKET.get(`orgs/${org.id}/images/${image.id}/original`);
    const digest = async (b: ArrayBuffer | Uint8Array) => [...new Uint8Array(await crypto.subtle.digest("SHA-256", b))].join(",");
    expect(await digest(await stored!.arrayBuffer())).toBe(await digest(file));
  });
});

describe("upload size and deletion", () => {
  it("refuses a declared size above MAX_UPLOAD_BYTES with 413 and keeps no record", async () => {
    const org = await createOrg();
    const response = await call("/upload", { key: org.key, json: { name: "huge.tif", size: 6 * 1024 ** 3 } });
    expect(response.status).toBe(413);
    expect(await imageRows(org.id)).toBe(0);
  });

  it("DELETE /image/{id} removes the bytes, the segmentations and their artifacts", async () => {
    const org = await createOrg();
    const image = await uploadImage(org, "a.png");
    const segmentationId = crypto.randomUUID();
    const artifactKey = `orgs/${org.id}/segmentations/${segmentationId}/rois.bin`;
    await env.BUCKET.put(artifactKey, new Uint8Array([1, 2, 3]));
    await env.DB.prepare(
      "INSERT INTO segmentations (id, org_id, image_id, image_name, source, roi_count, confluency, width, height, artifact_key, created_at) VALUES (?, ?, ?, 'a.png', 'model', 0, 0, 8, 6, ?, 0)",
    ).bind(segmentationId, org.id, image.id, artifactKey).run();
    expect((await call(`/image/${image.id}`, { key: org.key, method: "DELETE" })).status).toBe(204);
    expect((await call(`/image/${image.id}`, { key: org.key })).status).toBe(404);
    expect((await call(`/segmentation/${segmentationId}`, { key: org.key })).status).toBe(404);
    expect(await storedObjects(`orgs/${org.id}/`)).toBe(0);
    expect(await imageRows(org.id)).toBe(0);
  });
});
