import { encodeRoiArtifact } from "../../schema/roi-artifact-writer.ts";
import { EXPORTS } from "../../worker/exports/index.ts";
import { readRoiArtifact } from "../../schema/roi-artifact-reader.ts";
import { inRasterOrder, roisFromShapes, syntheticShapes } from "../../test/worker/exports/helpers/rois-from-runs.ts";
const rois = roisFromShapes(inRasterOrder(syntheticShapes(400, 250, 24, 1)));
const chunks: Uint8Array[] = [];
for await (const c of encodeRoiArtifact({ imageWidth: 9600, imageHeight: 6000, confluency: 0.3, modelName: "b", modelVersion: "1" }, rois)) chunks.push(c);
const ctx = { segmentationId: "seg_bench", segmentationSource: "model" as const, modelName: "bench", imageName: "x.tif", imageWidth: 9600, imageHeight: 6000, confluency: 0.3 };
const body = () => ReadableStream.from(chunks) as ReadableStream<Uint8Array>;
let t = performance.now();
const c = await readRoiArtifact(body()); let n = 0; for await (const r of c.rois) n++;
console.log("decode only", (performance.now() - t).toFixed(0), "ms", n);
for (const f of ["measurements.csv", "rois.geojson", "rois.zip", "masks.png"] as const) {
  t = performance.now();
  const file = await EXPORTS[f](body(), ctx, {});
  let bytes = 0; for await (const ch of file.body) bytes += ch.length;
  console.log(f, (performance.now() - t).toFixed(0), "ms", (bytes / 1e6).toFixed(1), "MB", process.memoryUsage().heapUsed / 1e6 | 0, "MB heap");
}
