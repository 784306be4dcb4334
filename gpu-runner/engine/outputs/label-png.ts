// The label mask as a 16-bit grayscale PNG (0 = background, ROI index + 1 = its pixels), the
// layout of the training data's labels/ folders. Rows are rendered from the cells' outlines
// (common/geometry/roi-raster.ts, the service's own rule, which gives back the masks exactly) one at a time
// and deflated by Node's native zlib as they come, into IDAT chunks written as they fill (the
// framing is the service's: common/png-chunks.ts): memory is a few rows, whatever the image size.
import { createDeflate } from "node:zlib";
import { label16Header, PNG_SIGNATURE, pngChunk } from "../../../common/png-chunks.ts";
import type { Roi } from "../../../schema/roi.ts";
import { PNG_MAX_LABEL } from "../../../schema/label-png-limit.ts";
import { LabelRowRenderer } from "../../../common/geometry/roi-raster.ts";
import { BufferedFile } from "./buffered-file.ts";

export async function writeLabelPng(path: string, width: number, height: number, rois: readonly Roi[]): Promise<void> {
  if (rois.length > PNG_MAX_LABEL)
    throw new RangeError(`${rois.length} cells do not fit a 16-bit PNG (at most ${PNG_MAX_LABEL} labels): use the 32-bit TIFF (masks.tif) instead`);
  const file = await BufferedFile.create(path);
  await file.write(PNG_SIGNATURE);
  await file.write(label16Header(width, height));
  const deflate = createDeflate({ level: 3 });
  const compressed: Promise<void> = (async () => {
    for await (const data of deflate) await file.write(pngChunk("IDAT", data as Buffer));
  })();
  const renderer = new LabelRowRenderer(width, height, inOrder(rois));
  const labels = new Uint32Array(width);
  const rowBytes = 1 + 2 * width;
  while (await renderer.next(labels)) {
    const raw = Buffer.alloc(rowBytes); // filter type 0, then big-endian samples
    for (let x = 0, at = 1; x < width; x++, at += 2) raw.writeUInt16BE(labels[x]!, at);
    if (!deflate.write(raw)) await new Promise((resolve) => deflate.once("drain", resolve));
  }
  deflate.end();
  await compressed;
  await file.write(pngChunk("IEND", new Uint8Array(0)));
  await file.close();
}

async function* inOrder(rois: readonly Roi[]): AsyncGenerator<Roi> {
  yield* rois;
}
