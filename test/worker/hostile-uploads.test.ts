// The crafted hostile files of issue 15 (test/fixtures/hostile-images.ts) at upload: each
// one the header probe can tell is refused with 415/422 naming the problem and leaves nothing
// behind, and the probe reads a bounded number of R2 ranges however the directories are laid out.
// Crafted forms of issue 35: a repeated part is refused at its second occurrence (each `file`
// part of an import allocated a buffer the size of the body, so 2 MiB of parts took 27 s), and a
// multipart type without a boundary is a 400 on every route that takes a form.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { PROBE_READ_BUDGET, probeStoredObject } from "../../worker/services/image-probe.ts";
import { hostileFiles, rawTiff, sharedTileSlide } from "../fixtures/hostile-images.ts";
import { ImageDecodeError } from "../../schema/image-formats/index.ts";
import { call, createOrg, json, multipartFile, ONE_SQUARE_GEOJSON, pngBytes, type TestOrg, uploadImage } from "./helpers.ts";

/** The test's R2 bucket, counting the ranged reads made through it. */
function countingBucket(): { bucket: R2Bucket; reads: () => number } {
  let reads = 0;
  const bucket = {
    get: (key: string, options?: R2GetOptions) => {
      reads++;
      return env.BUCKET.get(key, options);
    },
  } as unknown as R2Bucket;
  return { bucket, reads: () => reads };
}

describe("uploading crafted hostile files", () => {
  for (const file of hostileFiles().filter((f) => f.refusedAtUpload)) {
    it(`refuses ${file.name}, keeping nothing`, async () => {
      const org = await createOrg();
      const response = await call("/upload", { key: org.key, body: multipartFile("hostile.bin", file.bytes) });
      const body = await json<{ detail: string }>(response);
      expect(response.status === 415 || response.status === 422, `${response.status}: ${body.detail}`).toBe(true);
      expect(body.detail).toMatch(file.error);
      const rows = await env.DB.prepare("SELECT count(*) AS n FROM images WHERE org_id = ?").bind(org.id).first<{ n: number }>();
      expect(rows!.n).toBe(0);
      expect((await env.BUCKET.list({ prefix: `orgs/${org.id}/` })).objects).toHaveLength(0);
    });
  }
});

describe("the upload probe's reads", () => {
  it("accepts a whole slide of 10^10 samples from its headers alone: the runner reads it by region", async () => {
    const side = 100_000;
    const bytes = sharedTileSlide(side);
    await env.BUCKET.put("probe-test/slide.tif", bytes);
    const { bucket, reads } = countingBucket();
    expect(await probeStoredObject(bucket, "probe-test/slide.tif", bytes.length)).toMatchObject({ format: "tiff", width: side, height: side, channels: 1 });
    expect(reads()).toBeLessThanOrEqual(PROBE_READ_BUDGET.reads);
  });

  it("reads 100,000 directories rotated over 17 blocks from a few dozen ranges before refusing them", async () => {
    const file = hostileFiles().find((f) => f.name.includes("100,000 directories"))!;
    await env.BUCKET.put("probe-test/rotated.tif", file.bytes);
    const { bucket, reads } = countingBucket();
    await expect(probeStoredObject(bucket, "probe-test/rotated.tif", file.bytes.length)).rejects.toThrow(/more than 65536 directories/);
    expect(reads()).toBeLessThanOrEqual(80);
  });

  // A thousand sequential reads of local R2 take seconds when the machine is busy.
  it("stops at its read budget on directories scattered across the file, with a 422-kind error", { timeout: 60_000 }, async () => {
    // 1,500 directories 17 KiB apart: each needs a read of its own.
    const spacing = 17 * 1024;
    const count = 1500;
    const directories = Array.from({ length: count }, (_, i) => ({
      at: 8 + i * spacing,
      entries:
        i === 0
          ? ([
              [256, 4, 1, 1],
              [257, 4, 1, 1],
              [258, 3, 1, 8],
              [273, 4, 1, 200],
              [279, 4, 1, 1],
            ] as [number, number, number, number][])
          : [],
      next: i + 1 < count ? 8 + (i + 1) * spacing : 0,
    }));
    const bytes = rawTiff(8 + count * spacing, 8, directories);
    await env.BUCKET.put("probe-test/scattered.tif", bytes);
    const { bucket, reads } = countingBucket();
    const error = await probeStoredObject(bucket, "probe-test/scattered.tif", bytes.length).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ImageDecodeError);
    expect(error).toMatchObject({ kind: "too-large", message: expect.stringMatching(/too scattered to read/) });
    expect(reads()).toBeLessThanOrEqual(PROBE_READ_BUDGET.reads);
  });
});

const BOUNDARY = "----cellseg-hostile-form";
const encoder = new TextEncoder();
/** One multipart part, written by hand (FormData would not say how it is chunked). */
const formPart = (name: string, content: string) =>
  encoder.encode(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"; filename="${name}.bin"\r\n\r\n${content}\r\n`);
const FORM_HEADERS = { "Content-Type": `multipart/form-data; boundary=${BOUNDARY}` };

/** A body of the given parts, one chunk each, then the closing line; counts the chunks the worker pulled. */
function countedBody(parts: Uint8Array[]): { body: ReadableStream<Uint8Array>; pulled: () => number } {
  let next = 0;
  const body = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        if (next < parts.length) controller.enqueue(parts[next++]!);
        else if (next++ === parts.length) controller.enqueue(encoder.encode(`--${BOUNDARY}--\r\n`));
        else controller.close();
      },
    },
    { highWaterMark: 0 },
  );
  return { body, pulled: () => next };
}

async function storedFor(org: TestOrg): Promise<{ images: number; segmentations: number; objects: number }> {
  const count = (table: string) => env.DB.prepare(`SELECT count(*) AS n FROM ${table} WHERE org_id = ?`).bind(org.id).first<{ n: number }>();
  return {
    images: (await count("images"))!.n,
    segmentations: (await count("segmentations"))!.n,
    objects: (await env.BUCKET.list({ prefix: `orgs/${org.id}/segmentations/` })).objects.length,
  };
}

describe("forms with repeated parts", () => {
  it("an import with a second file part is refused with 400 naming it, and stores nothing", async () => {
    const org = await createOrg();
    const image = await uploadImage(org);
    const form = new FormData();
    form.append("image_id", image.id);
    form.append("file", new File([ONE_SQUARE_GEOJSON], "a.geojson"));
    form.append("file", new File([ONE_SQUARE_GEOJSON], "b.geojson"));
    const response = await call("/segmentation", { key: org.key, body: form });
    expect(response.status).toBe(400);
    expect(await json(response)).toEqual({ detail: "The multipart body has a second part named 'file'; send one" });
    expect(await storedFor(org)).toEqual({ images: 1, segmentations: 0, objects: 0 });
  });

  it("an import with a second image_id is refused alike", async () => {
    const org = await createOrg();
    const image = await uploadImage(org);
    const form = new FormData();
    form.append("image_id", image.id);
    form.append("image_id", image.id);
    form.append("file", new File([ONE_SQUARE_GEOJSON], "a.geojson"));
    const response = await call("/segmentation", { key: org.key, body: form });
    expect(response.status).toBe(400);
    expect(await json(response)).toEqual({ detail: "The multipart body has a second part named 'image_id'; send one" });
  });

  it("10,000 file parts are refused at the second: the worker reads a few of the body's chunks, not all of them", async () => {
    const org = await createOrg();
    const image = await uploadImage(org);
    const parts = [formPart("image_id", image.id), ...Array.from({ length: 10_000 }, () => formPart("file", ONE_SQUARE_GEOJSON))];
    const { body, pulled } = countedBody(parts);
    const response = await call("/segmentation", { key: org.key, body, headers: FORM_HEADERS });
    expect(response.status).toBe(400);
    expect(await json(response)).toEqual({ detail: "The multipart body has a second part named 'file'; send one" });
    expect(pulled()).toBeLessThan(100);
    expect(await storedFor(org)).toEqual({ images: 1, segmentations: 0, objects: 0 });
  });

  it("an upload with a second file part is refused with 400, keeping neither file", async () => {
    const org = await createOrg();
    const form = multipartFile("a.png", pngBytes());
    form.append("file", new File([pngBytes()], "b.png"));
    const response = await call("/upload", { key: org.key, body: form });
    expect(response.status).toBe(400);
    expect(await json(response)).toEqual({ detail: "The multipart body has a second part named 'file'; send one" });
    expect(await storedFor(org)).toEqual({ images: 0, segmentations: 0, objects: 0 });
    expect((await env.BUCKET.list({ prefix: `orgs/${org.id}/` })).objects).toHaveLength(0);
  });
});

describe("a multipart Content-Type without a boundary", () => {
  for (const path of ["/upload", "/segmentation"]) {
    it(`is answered 400 naming it by ${path}`, async () => {
      const org = await createOrg();
      const response = await call(path, { key: org.key, body: ONE_SQUARE_GEOJSON, headers: { "Content-Type": "multipart/form-data" } });
      expect(response.status).toBe(400);
      expect(await json(response)).toEqual({ detail: "Malformed multipart body: Content-Type multipart/form-data has no boundary" });
    });
  }
});
