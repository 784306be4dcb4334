// masks.tif: the label image as a tiled, Deflate-compressed 32-bit TIFF (schema/label-tiff.ts has
// the layout), for any number of ROIs. The TIFF's directory lists every tile's compressed size and
// comes before the tiles, and a response cannot go back to fill it in, so the export renders the
// ROIs twice: a first pass compresses every band only to learn the tile sizes (keeping 4 bytes a
// tile), then the header goes out and a second pass, over the artifact read again from R2,
// renders and compresses each band once more and sends it. Memory: one band of labels (at most
// LABEL_TIFF_BAND_BYTES) and its compressed tiles; never the image. The response's headers leave
// at once; its first byte follows the first pass.

import { LabelTiffWriter } from "../../schema/label-tiff.ts";
import type { RoiArtifactContents } from "../../schema/roi-artifact.ts";
import { RoiArtifactError } from "../../schema/roi-artifact.ts";
import { LabelRowRenderer } from "../../common/geometry/roi-raster.ts";
import { pullStream } from "./pull-stream.ts";

/** Renders the artifact's labels into `band` one band at a time, yielding each band's index once its rows are there. */
async function* bands(contents: RoiArtifactContents, writer: LabelTiffWriter, band: Uint32Array): AsyncGenerator<number> {
  const { width } = writer;
  const renderer = new LabelRowRenderer(width, writer.height, contents.rois);
  try {
    for (let b = 0; b < writer.bands; b++) {
      const rows = writer.bandRows(b);
      for (let r = 0; r < rows; r++) {
        if (!(await renderer.next(band.subarray(r * width, (r + 1) * width)))) throw new RoiArtifactError(`the labels ended at band ${b}`);
      }
      yield b;
    }
  } finally {
    await renderer.close();
  }
}

/**
 * The TIFF of `first` (an artifact whose header has been read); `reread` opens the same artifact
 * again for the second pass.
 */
export function labelTiff(first: RoiArtifactContents, reread: () => Promise<RoiArtifactContents>, description: string): ReadableStream<Uint8Array> {
  const { imageWidth, imageHeight, roiCount } = first.header;
  const writer = new LabelTiffWriter(imageWidth, imageHeight, { description });
  const band = new Uint32Array(writer.tileHeight * imageWidth);
  async function* tiff(): AsyncGenerator<Uint8Array> {
    for await (const b of bands(first, writer, band)) writer.encodeBand(band, b);
    yield writer.header();
    const second = await reread();
    const h = second.header;
    if (h.imageWidth !== imageWidth || h.imageHeight !== imageHeight || h.roiCount !== roiCount) {
      await second.rois.return?.(undefined);
      throw new RoiArtifactError("the ROI artifact changed between the two passes of masks.tif");
    }
    for await (const b of bands(second, writer, band)) yield writer.encodeBand(band, b);
  }
  return pullStream(tiff());
}
