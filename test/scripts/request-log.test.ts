// npm start's log: wrangler's line per request is left out (the runner's long poll alone made some
// 680 in 10 minutes), while a request answered 5xx, warnings, errors and the banner stay.
import { Readable } from "node:stream";
import { text } from "node:stream/consumers";
import { describe, expect, it } from "vitest";
import { isQuietRequestLine, withoutRequestLines } from "../../scripts/request-log.ts";

describe("npm start's log of wrangler dev", () => {
  it("leaves out the request lines of requests that did not fail, coloured or not", () => {
    expect(isQuietRequestLine("[wrangler:info] POST /api/v1/internal/jobs/lease 204 No Content (20000ms)")).toBe(true);
    expect(isQuietRequestLine("[wrangler:info] GET /api/v1/openapi.json 200 OK (12ms)")).toBe(true);
    expect(isQuietRequestLine("\u001b[2m[wrangler:info]\u001b[22m GET /dashboard 302 Found (3ms)")).toBe(true);
    expect(isQuietRequestLine("[wrangler:info] GET /api/v1/images 401 Unauthorized (2ms)")).toBe(true);
  });

  it("keeps a request answered 5xx, warnings, errors, the banner and the worker's own lines", () => {
    for (const line of [
      "[wrangler:info] POST /api/v1/predict 500 Internal Server Error (40ms)",
      "[wrangler:info] Ready on http://127.0.0.1:8787",
      "▲ [WARNING] Scheduled Workers are not automatically triggered during local development.",
      "✘ [ERROR] Something failed",
      "[runner] job_1 completed",
    ])
      expect(isQuietRequestLine(line), line).toBe(false);
  });

  it("filters a stream line by line, whatever the chunks' boundaries", async () => {
    const log = [
      "[wrangler:info] Ready on http://127.0.0.1:8787\n[wrangler:info] POST /api/v1/internal/jobs/l",
      "ease 204 No Content (20000ms)\n[wrangler:info] POST /api/v1/predict 503 Service Unavailable (1ms)\n",
      "done",
    ];
    const out = await text(Readable.from(log).pipe(withoutRequestLines()));
    expect(out).toBe("[wrangler:info] Ready on http://127.0.0.1:8787\n[wrangler:info] POST /api/v1/predict 503 Service Unavailable (1ms)\ndone");
  });
});
