// A whole slide is read by range requests for longer than its signed URL lives (15 minutes): a
// read answered 403 asks for a fresh URL once, and reads on with it. Found by the 2 GiB service
// bench, whose first attempt died at the URL's expiry a quarter of the way through its blocks.
// Served by a real local HTTP server that honours a URL only until it is renewed.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readConfig } from "../../gpu-runner/runner/config.ts";
import { internalApi } from "../../gpu-runner/runner/internal-api.ts";

const FILE = new Uint8Array(64 * 1024).map((_, i) => (i * 7) % 256);

describe("an image read in parts through a signed URL", () => {
  let server: Server;
  let base: string;
  /** The one URL signature the server honours now; renewing makes the next one valid instead. */
  let valid = "sig-1";
  const seen: string[] = [];

  beforeAll(async () => {
    server = createServer((request, response) => {
      const url = new URL(request.url!, "http://x");
      seen.push(url.searchParams.get("sig")!);
      if (url.searchParams.get("sig") !== valid) {
        response.writeHead(403, { "Content-Type": "application/json" }).end('{"detail":"Invalid signed URL: expired"}');
        return;
      }
      const [, from, to] = /bytes=(\d+)-(\d+)/.exec(request.headers.range ?? "")!.map(Number);
      response.writeHead(206, { "Content-Range": `bytes ${from}-${to}/${FILE.length}` }).end(FILE.subarray(from, to! + 1));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/original`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const api = () => internalApi(readConfig([], { WORKER_URL: "http://127.0.0.1:1", RUNNER_TOKEN: "t" }), () => undefined);

  it("renews an expired URL once for reads that meet the expiry together, and reads the same bytes on", async () => {
    valid = "sig-1";
    let renewals = 0;
    const source = await api().rangeSource(`${base}?sig=sig-1`, async () => {
      renewals++;
      return `${base}?sig=sig-2`;
    });
    expect(await source.read(100, 50)).toEqual(FILE.subarray(100, 150));
    valid = "sig-2"; // the first URL expires
    const reads = await Promise.all([source.read(0, 10), source.read(1000, 4000), source.read(60_000, 5536)]);
    expect(reads).toEqual([FILE.subarray(0, 10), FILE.subarray(1000, 5000), FILE.subarray(60_000)]);
    expect(renewals).toBe(1);
    expect(await source.read(5, 5)).toEqual(FILE.subarray(5, 10));
    expect(seen.at(-1)).toBe("sig-2");
  });

  it("without a way to renew, says the read was refused", async () => {
    valid = "sig-1";
    const source = await api().rangeSource(`${base}?sig=sig-1`);
    valid = "sig-3";
    await expect(source.read(0, 10)).rejects.toThrow(/answered 403, not 206 Partial Content/);
  });
});
