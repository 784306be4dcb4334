// Uploads whose client goes away: a streamed upload cut off mid-stream keeps no record and no R2
// parts, whether its own request cleans up or (the request died where no cleanup could run) the
// storage sweeper does; a resumable upload never completed still counts against the storage cap,
// as the API contract says, until it is deleted.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { STALE_STREAM_MS, STALE_UPLOAD_MS, sweepStorage } from "../../worker/services/storage-sweeper.ts";
import { call, createOrg, json, type TestOrg, tiffBytes, uploadImage } from "./helpers.ts";

const MiB = 1024 * 1024;
const BOUNDARY = "cut-off-upload";

interface ImageRow {
  id: string;
  r2_key: string;
  upload_id: string | null;
  status: string;
}

const imageRows = async (orgId: string) =>
  (await env.DB.prepare("SELECT id, r2_key, upload_id, status FROM images WHERE org_id = ?").bind(orgId).all<ImageRow>()).results;

/**
 * A multipart body that sends its file part's header and `bytes` bytes of a TIFF (more than one
 * 8 MiB R2 part), then waits: `drained` resolves once the worker has read them all (it stores each
 * full part before it reads on), and `cut()` breaks the body off the way a client that hangs up does.
 */
function bodyThatBreaksOff(bytes: number) {
  const file = new Uint8Array(bytes);
  file.set(tiffBytes(8, 8));
  const head = new TextEncoder().encode(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="cut.tif"\r\nContent-Type: image/tiff\r\n\r\n`);
  let cut!: (reason: Error) => void;
  const broken = new Promise<never>((_, reject) => (cut = reject));
  let drainedNow!: () => void;
  const drained = new Promise<void>((resolve) => (drainedNow = resolve));
  let sent = false;
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!sent) {
        sent = true;
        controller.enqueue(head);
        for (let offset = 0; offset < file.length; offset += MiB) controller.enqueue(file.slice(offset, offset + MiB));
        return;
      }
      drainedNow();
      try {
        await broken;
      } catch (reason) {
        controller.error(reason);
      }
    },
  });
  return { stream, drained, cut: () => cut(new Error("client went away")) };
}

function startStreamedUpload(org: TestOrg, stream: ReadableStream<Uint8Array>): Promise<Response> {
  return call("/upload", { key: org.key, body: stream, headers: { "Content-Type": `multipart/form-data; boundary=${BOUNDARY}` } });
}

/** The record of the upload in flight, once the worker has stored its first part. */
async function whileStreaming(orgId: string, drained: Promise<void>): Promise<ImageRow> {
  await drained;
  const rows = await imageRows(orgId);
  expect(rows).toMatchObject([{ status: "pending", upload_id: expect.any(String) }]);
  return rows[0]!;
}

/** Whether R2 still holds the multipart upload (and so its parts). */
async function multipartAlive(row: ImageRow): Promise<boolean> {
  try {
    await env.BUCKET.resumeMultipartUpload(row.r2_key, row.upload_id!).uploadPart(2, new Uint8Array(5 * MiB));
    return true;
  } catch {
    return false;
  }
}

describe("a streamed upload (POST /upload, one call) whose client hangs up mid-stream", () => {
  it("records its R2 multipart upload before streaming, then aborts it and keeps no record", async () => {
    const org = await createOrg();
    const body = bodyThatBreaksOff(9 * MiB);
    const answer = startStreamedUpload(org, body.stream);
    const inFlight = await whileStreaming(org.id, body.drained);

    body.cut();
    const response = await answer;
    // workerd hands the worker a body cut off by its client as one that ends early.
    expect(response.status).toBe(400);
    expect((await json(response)).detail).toBe("Malformed multipart body: multipart body ends before its closing boundary");
    expect(await imageRows(org.id)).toEqual([]);
    expect(await multipartAlive(inFlight)).toBe(false);
    expect((await env.BUCKET.list({ prefix: `orgs/${org.id}/` })).objects).toEqual([]);
  });

  it("is aborted and removed by the storage sweeper when its request died before it could clean up", async () => {
    const org = await createOrg();
    const body = bodyThatBreaksOff(9 * MiB);
    // The request stays open, as one whose isolate was killed never answers: only the sweeper acts.
    const answer = startStreamedUpload(org, body.stream);
    const inFlight = await whileStreaming(org.id, body.drained);

    await sweepStorage(env);
    expect(await imageRows(org.id)).toHaveLength(1); // a live stream is left alone
    await sweepStorage(env, Date.now() + STALE_STREAM_MS + 1000);
    expect(await imageRows(org.id)).toEqual([]);
    expect(await multipartAlive(inFlight)).toBe(false);

    body.cut();
    await answer;
    expect(await imageRows(org.id)).toEqual([]);
    expect((await env.BUCKET.list({ prefix: `orgs/${org.id}/` })).objects).toEqual([]);
  });
});

describe("a resumable upload never completed", () => {
  it("counts against the storage cap after the sweeper gave it up, until it is deleted", async () => {
    const org = await createOrg({ storageCap: 2 });
    await uploadImage(org);
    const started = await json<{ image: { id: string } }>(await call("/upload", { key: org.key, json: { name: "late.tif", size: 1000 } }));
    await env.DB.prepare("UPDATE images SET updated_at = ? WHERE id = ?")
      .bind(Date.now() - STALE_UPLOAD_MS - 1, started.image.id)
      .run();
    await sweepStorage(env);
    expect((await json(await call(`/upload/${started.image.id}`, { key: org.key }))).upload_status).toBe("failed");

    const refused = await call("/upload", { key: org.key, json: { name: "next.tif", size: 1000 } });
    expect(refused.status).toBe(402);
    expect((await json(refused)).detail).toMatch(/at most 2 images/);

    expect((await call(`/upload/${started.image.id}`, { key: org.key, method: "DELETE" })).status).toBe(204);
    expect((await call("/upload", { key: org.key, json: { name: "next.tif", size: 1000 } })).status).toBe(201);
  });
});
