// The Worker that `npm run bench:exports` runs in local workerd: it serves the ROI artifact from R2
// raw (the ceiling: no decoding, no formatting) and through the same export entries the route
// calls, so both paths read the same bytes from the same local R2.

import { EXPORTS, isExportFormat } from "../../worker/exports/index.ts";
import type { ExportContext } from "../../worker/exports/index.ts";

// The slice of R2's binding this Worker uses (typed here so the Node-side typecheck needs no
// Workers types).
interface Env {
  BUCKET: { get(key: string): Promise<{ body: ReadableStream<Uint8Array> } | null> };
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const url = new URL(request.url);
    const key = url.searchParams.get("key") ?? "";
    const object = await env.BUCKET.get(key);
    if (!object) return new Response("no artifact", { status: 404 });
    if (url.pathname === "/raw") return new Response(object.body);
    const format = url.pathname.replace(/^\/export\//, "");
    if (!isExportFormat(format)) return new Response("unknown format", { status: 404 });
    const context = JSON.parse(url.searchParams.get("context") ?? "{}") as ExportContext;
    const file = await EXPORTS[format](object.body, context, {});
    return new Response(file.body, { headers: { "content-type": file.contentType } });
  },
};
