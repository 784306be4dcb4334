// rois.zip: one ImageJ .roi per ROI, named <roi_index zero-padded>-<roi_id>.roi so names are unique
// and sort in roi_index order (Fiji's ROI Manager lists them in that order).

import type { RoiArtifactContents } from "../../schema/roi-artifact.ts";
import { roiId } from "../../schema/measurements.ts";
import type { ExportContext } from "../../schema/measurements.ts";
import { encodeImageJRoi, IMAGEJ_MAX_COORDINATE, ImageJRoiLimitError } from "./imagej-roi.ts";
import { concatBytes, pullStream } from "./pull-stream.ts";
import { StreamingZipWriter } from "./zip-writer.ts";

const BATCH_BYTES = 64 * 1024;

/** File-name-safe form of an id: anything outside [A-Za-z0-9._-] becomes "_". */
function fileSafe(text: string): string {
  return text.replace(/[^A-Za-z0-9._-]/g, "_");
}

// Exported for its test only (test/worker/exports/rois-zip.test.ts).
/** The entry name (also the ROI's name inside the .roi) for a 0-based index; pads to at least 5 digits. */
export function imageJRoiName(context: ExportContext, index: number, roiCount: number): string {
  const digits = Math.max(5, String(roiCount).length);
  return `${String(index + 1).padStart(digits, "0")}-${fileSafe(roiId(context.segmentationId, index))}`;
}

export function roisZip(artifact: RoiArtifactContents, context: ExportContext): ReadableStream<Uint8Array> {
  const { imageWidth, imageHeight, roiCount } = artifact.header;
  if (imageWidth > IMAGEJ_MAX_COORDINATE || imageHeight > IMAGEJ_MAX_COORDINATE) {
    throw new ImageJRoiLimitError(`a ${imageWidth}x${imageHeight} image is beyond ImageJ .roi coordinates (at most ${IMAGEJ_MAX_COORDINATE})`);
  }
  async function* archive(): AsyncGenerator<Uint8Array> {
    const zip = new StreamingZipWriter();
    // Entries are a few hundred bytes; batching them keeps the stream's chunk count sensible.
    let batch: Uint8Array[] = [];
    let batchBytes = 0;
    for await (const roi of artifact.rois) {
      const name = imageJRoiName(context, roi.index, roiCount);
      const entry = zip.addStoredFile(`${name}.roi`, encodeImageJRoi(roi, name));
      batch.push(entry);
      batchBytes += entry.length;
      if (batchBytes >= BATCH_BYTES) {
        yield concatBytes(batch, batchBytes);
        batch = [];
        batchBytes = 0;
      }
    }
    if (batchBytes > 0) yield concatBytes(batch, batchBytes);
    yield* zip.finish();
  }
  return pullStream(archive());
}
