// Rewrites the golden files from the small segmentation: run by hand after an intended format
// change (`node test/worker/exports/golden/regenerate.ts`), then review the diff before committing.
// The ZIP is stored base64-encoded because the workerd test bundle can import text and images but
// not arbitrary binary files; `base64 -d rois.zip.base64 > rois.zip` gives the archive back.

import { encodeRoiArtifact } from "../../../../common/roi-artifact/writer.ts";
import { EXPORTS } from "../../../../worker/exports/index.ts";
import { pullStream } from "../../../../worker/exports/pull-stream.ts";
import type { ExportFormatName } from "../../../../worker/exports/index.ts";
import { smallContext, smallDescription, smallRois } from "../helpers/small-segmentation.ts";

// This script runs in Node, but it sits with the workerd tests, whose typecheck has no Node types:
// the one Node API it needs is typed by hand.
const { writeFileSync } = (await import("node:fs" as string)) as { writeFileSync(path: URL, data: Uint8Array | string): void };
const here = new URL(".", (import.meta as unknown as { url: string }).url);

async function render(format: ExportFormatName): Promise<Uint8Array> {
  const artifact = () => pullStream(encodeRoiArtifact(smallDescription, smallRois));
  const file = await EXPORTS[format](artifact(), smallContext, {}, async () => artifact());
  return new Uint8Array(await new Response(file.body).arrayBuffer());
}

writeFileSync(new URL("measurements.csv", here), await render("measurements.csv"));
writeFileSync(new URL("rois.geojson", here), await render("rois.geojson"));
writeFileSync(new URL("rois.zip.base64", here), `${btoa(Array.from(await render("rois.zip"), (b) => String.fromCharCode(b)).join(""))}\n`);
writeFileSync(new URL("masks.png", here), await render("masks.png"));
console.log("golden files written to", here.pathname);
