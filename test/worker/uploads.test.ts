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
    expect(image).toMatchObject({
      name: "plate 1, well A.png",
      upload_status: "ready",
      upload_error: null,
      format: "png",
      width: 8,
      height: 6,
      channels: 1,
      bit_depth: 16,
      planes: 1,
    });
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

/** A multipart body written by hand, so its Content-Disposition can be anything a client sends. */
function rawMultipart(disposition: string, bytes: Uint8Array): { body: Uint8Array; headers: Record<string, string> } {
  const boundary = "----cellseg-test-boundary";
  const head = new TextEncoder().encode(`--${boundary}\r\nContent-Disposition: ${disposition}\r\nContent-Type: image/png\r\n\r\n`);
  const tail = new TextEncoder().encode(`\r\n--${boundary}--\r\n`);
  const body = new Uint8Array(head.length + bytes.length + tail.length);
  body.set(head, 0);
  body.set(bytes, head.length);
  body.set(tail, head.length + bytes.length);
  return { body, headers: { "Content-Type": `multipart/form-data; boundary=${boundary}` } };
}

describe("POST /upload (multipart) file names", () => {
  it("keeps a name of 255 characters", async () => {
    const org = await createOrg();
    const name = `${"n".repeat(251)}.png`;
    const response = await call("/upload", { key: org.key, body: multipartFile(name, pngBytes()) });
    expect(response.status).toBe(201);
    expect((await json<{ image: { name: string } }>(response)).image.name).toBe(name);
  });

  it("refuses a name longer than 255 characters with 422 in the validation shape, keeping nothing", async () => {
    const org = await createOrg();
    const response = await call("/upload", { key: org.key, body: multipartFile(`${"n".repeat(252)}.png`, pngBytes()) });
    expect(response.status).toBe(422);
    expect((await json(response)).detail).toEqual([expect.objectContaining({ loc: ["body", "file", "filename"], type: "string_too_long", ctx: { max: 255 } })]);
    expect(await imageRows(org.id)).toBe(0);
    expect(await storedObjects(`orgs/${org.id}/`)).toBe(0);
  });

  it("reads an RFC 5987 filename* in preference to the plain filename", async () => {
    const org = await createOrg();
    const { body, headers } = rawMultipart(`form-data; name="file"; filename="cells.png"; filename*=UTF-8''Zellkern%20%C3%98.png`, pngBytes());
    const response = await call("/upload", { key: org.key, body, headers });
    expect(response.status).toBe(201);
    expect((await json<{ image: { name: string } }>(response)).image.name).toBe("Zellkern Ø.png");
  });

  for (const [what, star] of [
    ["a broken %-escape", "UTF-8''cells%E.png"],
    ["bytes that are not UTF-8", "UTF-8''cells%FF%FE.png"],
    ["no charset", "cells.png"],
    ["an unknown charset", "koi8-r''cells.png"],
  ]) {
    it(`answers 400 with a detail to a filename* with ${what}, keeping nothing`, async () => {
      const org = await createOrg();
      const { body, headers } = rawMultipart(`form-data; name="file"; filename*=${star}`, pngBytes());
      const response = await call("/upload", { key: org.key, body, headers });
      expect(response.status).toBe(400);
      expect((await json(response)).detail).toMatch(/^Malformed multipart body: Content-Disposition filename\*/);
      expect(await imageRows(org.id)).toBe(0);
      expect(await storedObjects(`orgs/${org.id}/`)).toBe(0);
    });
  }
});

describe("POST /upload (multipart) with a malformed Content-Type", () => {
  for (const [what, contentType, detail] of [
    ["no boundary", "multipart/form-data", /has no boundary/],
    ["an empty boundary", 'multipart/form-data; boundary=""', /has no boundary/],
    ["a boundary over 70 characters", `multipart/form-data; boundary=${"b".repeat(71)}`, /longer than 70 characters/],
  ] as const) {
    it(`answers 400 with a detail to ${what}, keeping nothing`, async () => {
      const org = await createOrg();
      const response = await call("/upload", { key: org.key, body: pngBytes(), headers: { "Content-Type": contentType } });
      expect(response.status).toBe(400);
      expect((await json(response)).detail).toMatch(detail);
      expect(await imageRows(org.id)).toBe(0);
    });
  }
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

describe("finding a file uploaded before, by its SHA-256", () => {
  const hex = async (bytes: Uint8Array) =>
    [...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))].map((b) => b.toString(16).padStart(2, "0")).join("");

  it("records the SHA-256 of a one-call upload as it streams in, and GET /images?sha256= finds it, in its organization only", async () => {
    const org = await createOrg();
    const file = tiffBytes(8, 8);
    const { image } = await json<{ image: { id: string; sha256: string } }>(await call("/upload", { key: org.key, body: multipartFile("a.tif", file) }));
    expect(image.sha256).toBe(await hex(file));
    const found = await json<{ items: { id: string }[] }>(await call(`/images?sha256=${image.sha256.toUpperCase()}`, { key: org.key }));
    expect(found.items.map((i) => i.id)).toEqual([image.id]);
    const other = await createOrg();
    expect((await json<{ items: unknown[] }>(await call(`/images?sha256=${image.sha256}`, { key: other.key }))).items).toEqual([]);
    const malformed = await call("/images?sha256=abc", { key: org.key });
    expect(malformed.status).toBe(422);
  });

  it("records the SHA-256 a resumable upload declares, refusing one that is no SHA-256", async () => {
    const org = await createOrg();
    const declared = "AB".repeat(32);
    const started = await json<{ image: { sha256: string } }>(
      await call("/upload", { key: org.key, json: { name: "big.tif", size: 6 * 1024 * 1024, sha256: declared } }),
    );
    expect(started.image.sha256).toBe("ab".repeat(32));
    const refused = await call("/upload", { key: org.key, json: { name: "big.tif", size: 6 * 1024 * 1024, sha256: "not-a-digest" } });
    expect(refused.status).toBe(422);
    expect(await json(refused)).toMatchObject({ detail: [{ loc: ["body", "sha256"] }] });
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
    )
      .bind(segmentationId, org.id, image.id, artifactKey)
      .run();
    expect((await call(`/image/${image.id}`, { key: org.key, method: "DELETE" })).status).toBe(204);
    expect((await call(`/image/${image.id}`, { key: org.key })).status).toBe(404);
    expect((await call(`/segmentation/${segmentationId}`, { key: org.key })).status).toBe(404);
    expect(await storedObjects(`orgs/${org.id}/`)).toBe(0);
    expect(await imageRows(org.id)).toBe(0);
  });
});
