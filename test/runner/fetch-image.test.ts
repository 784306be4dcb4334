// A job's image is checked before it is downloaded (the lease's probed size against the decoder's
// limit) and downloaded no further than the runner's input limit; both end in an ImageDecodeError,
// which fails the job for good with the reason. Served by a real local HTTP server.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ImageDecodeError } from "../../common/decode/index.ts";
import { readConfig } from "../../gpu-runner/runner/config.ts";
import { fetchImage } from "../../gpu-runner/runner/fetch-image.ts";
import { internalApi } from "../../gpu-runner/runner/internal-api.ts";

const FILE = new Uint8Array(256 * 1024).map((_, i) => i % 251);
const CHUNKED_BYTES = 16 * 1024 * 1024;

describe("fetching a job's image", () => {
  let server: Server;
  let base: string;
  const requests: string[] = [];
  let bytesSent = 0;

  beforeAll(async () => {
    server = createServer((request, response) => {
      requests.push(request.url!);
      const declared = request.url === "/declared";
      // Chunked: no length known in advance, and 16 MiB, more than the kernel's socket buffers hold.
      const total = declared ? FILE.length : CHUNKED_BYTES;
      response.writeHead(200, declared ? { "Content-Length": String(FILE.length) } : {});
      // Sent in 16 KiB pieces, so a reader that stops early leaves most of it unsent.
      let at = 0;
      const next = () => {
        if (at >= total || response.destroyed) return response.end();
        const piece = FILE.subarray(at % FILE.length, (at % FILE.length) + 16 * 1024);
        at += piece.length;
        bytesSent += piece.length;
        if (response.write(piece)) setImmediate(next);
        else response.once("drain", next);
      };
      next();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const api = () => internalApi(readConfig([], { WORKER_URL: "http://127.0.0.1:1", RUNNER_TOKEN: "t" }), () => undefined);
  const image = (path: string, size: { width: number | null; height: number | null; channels: number | null }) => ({
    id: "img",
    name: "cells.tif",
    format: "tiff",
    url: `${base}${path}`,
    ...size,
  });

  it("downloads an image within the limits whole", async () => {
    const bytes = await fetchImage({ api: api(), maxInputBytes: FILE.length }, image("/declared", { width: 512, height: 512, channels: 1 }));
    expect(bytes).toEqual(FILE);
  });

  it("fails an image whose probed size is past the decoder's limit without downloading it", async () => {
    const before = requests.length;
    const attempt = fetchImage({ api: api(), maxInputBytes: FILE.length }, image("/declared", { width: 65535, height: 65535, channels: 1 }));
    await expect(attempt).rejects.toThrow(ImageDecodeError);
    await expect(attempt).rejects.toMatchObject({ kind: "too-large", message: expect.stringMatching(/image too large: 65535x65535x1/) });
    expect(requests.length).toBe(before);
  });

  it("refuses a file whose Content-Length is past the input limit before reading its body", async () => {
    const attempt = fetchImage({ api: api(), maxInputBytes: 64 * 1024 }, image("/declared", { width: 512, height: 512, channels: 1 }));
    await expect(attempt).rejects.toMatchObject({
      kind: "too-large",
      message: `image file cells.tif is ${FILE.length} bytes, more than the 65536 bytes this runner downloads (MAX_INPUT_MB)`,
    });
  });

  it("stops reading a file of unknown length once it passes the input limit", async () => {
    bytesSent = 0;
    const attempt = fetchImage({ api: api(), maxInputBytes: 32 * 1024 }, image("/chunked", { width: null, height: null, channels: null }));
    await expect(attempt).rejects.toMatchObject({
      kind: "too-large",
      message: "image file cells.tif is larger than the 32768 bytes this runner downloads (MAX_INPUT_MB)",
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(bytesSent).toBeLessThan(CHUNKED_BYTES);
  });
});
