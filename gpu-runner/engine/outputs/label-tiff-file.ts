// The label mask as a 32-bit tiled TIFF (schema/label-tiff.ts, the service's masks.tif), for
// segmentations whose labels do not fit a 16-bit PNG. The directory comes first and lists every
// tile's compressed size, so the rows are rendered from the outlines twice: once to learn the
// sizes, once to write; memory is one band of tile rows, whatever the image size.
import type { Roi } from "../../../schema/roi.ts";
import { LabelRowRenderer } from "../../../common/geometry/roi-raster.ts";
import { LabelTiffWriter } from "../../../schema/label-tiff.ts";
import { BufferedFile } from "./buffered-file.ts";

export async function writeLabelTiff(path: string, width: number, height: number, rois: readonly Roi[], description?: string): Promise<void> {
  const writer = new LabelTiffWriter(width, height, description === undefined ? {} : { description });
  for await (const _ of bands(writer, rois));
  const file = await BufferedFile.create(path);
  await file.write(writer.header());
  for await (const tiles of bands(writer, rois)) await file.write(tiles);
  await file.close();
}

async function* bands(writer: LabelTiffWriter, rois: readonly Roi[]): AsyncGenerator<Uint8Array> {
  const renderer = new LabelRowRenderer(writer.width, writer.height, inOrder(rois));
  const rows = new Uint32Array(writer.tileHeight * writer.width);
  for (let band = 0; band < writer.bands; band++) {
    const count = writer.bandRows(band);
    for (let r = 0; r < count; r++) await renderer.next(rows.subarray(r * writer.width, (r + 1) * writer.width));
    yield writer.encodeBand(rows.subarray(0, count * writer.width), band);
  }
}

async function* inOrder(rois: readonly Roi[]): AsyncGenerator<Roi> {
  yield* rois;
}
