// masks.png: the label image as a 16-bit grayscale PNG (labels 1..65535, 0 = background; more ROIs
// than that are refused, masks.tif holds them), streamed:
// rows are rendered one at a time, PNG-filtered, deflated by CompressionStream("deflate") (zlib
// framing, which IDAT requires), and every compressed piece leaves as its own IDAT chunk with its
// CRC computed as it goes. PNG chunk layout per the PNG specification (W3C, 2003).

import type { RoiArtifactContents } from "../../schema/roi-artifact.ts";
import { label16Header, PNG_SIGNATURE, pngChunk } from "../../common/png-chunks.ts";
import { PNG_MAX_LABEL } from "../../schema/label-png-limit.ts";
import { LabelRowRenderer } from "../../common/geometry/roi-raster.ts";
import { pullStream } from "./pull-stream.ts";

/** A segmentation whose labels do not fit 16 bits: the route answers 422 and names masks.tif. */
export class MasksPngLimitError extends Error {
  constructor(roiCount: number) {
    super(
      `This segmentation has ${roiCount} cells; masks.png holds at most ${PNG_MAX_LABEL} (16-bit labels). Download masks.tif instead: the same label image with 32-bit labels`,
    );
    this.name = "MasksPngLimitError";
  }
}
const FILTER_UP = 2;
const ROWS_BATCH_BYTES = 64 * 1024;

/**
 * Filtered scanlines, several rows per chunk. The "Up" filter stores each byte minus the byte
 * above it: labels repeat from row to row, so most filtered bytes are 0 and deflate well.
 */
function filteredRows(renderer: LabelRowRenderer): ReadableStream<Uint8Array> {
  const width = renderer.width;
  const labels = new Uint32Array(width);
  const stride = 1 + 2 * width;
  const rowsPerChunk = Math.max(1, Math.floor(ROWS_BATCH_BYTES / stride));
  let previous = new Uint8Array(2 * width);
  let current = new Uint8Array(2 * width);
  async function* rows(): AsyncGenerator<Uint8Array> {
    try {
      for (;;) {
        const chunk = new Uint8Array(rowsPerChunk * stride);
        let filled = 0;
        while (filled < rowsPerChunk && (await renderer.next(labels))) {
          // labels holds width values and current/previous 2 × width bytes, which bound both loops.
          for (let x = 0; x < width; x++) {
            const label = labels[x]!;
            current[2 * x] = label >>> 8;
            current[2 * x + 1] = label & 0xff;
          }
          const at = filled * stride;
          chunk[at] = FILTER_UP;
          for (let i = 0; i < current.length; i++) chunk[at + 1 + i] = current[i]! - previous[i]!;
          [previous, current] = [current, previous];
          filled++;
        }
        if (filled === 0) return;
        yield chunk.subarray(0, filled * stride);
        if (filled < rowsPerChunk) return;
      }
    } finally {
      await renderer.close();
    }
  }
  return pullStream(rows());
}

export function labelPng(artifact: RoiArtifactContents): ReadableStream<Uint8Array> {
  const { imageWidth, imageHeight, roiCount } = artifact.header;
  if (roiCount > PNG_MAX_LABEL) throw new MasksPngLimitError(roiCount);
  const renderer = new LabelRowRenderer(imageWidth, imageHeight, artifact.rois);
  async function* png(): AsyncGenerator<Uint8Array> {
    yield PNG_SIGNATURE;
    yield label16Header(imageWidth, imageHeight);
    // The DOM typings declare CompressionStream's input as BufferSource, which pipeThrough will not
    // match with a Uint8Array stream; the runtime takes Uint8Array chunks.
    const deflate = new CompressionStream("deflate") as unknown as TransformStream<Uint8Array, Uint8Array>;
    const compressed = filteredRows(renderer).pipeThrough(deflate);
    const reader = compressed.getReader();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        if (value.length > 0) yield pngChunk("IDAT", value);
      }
    } finally {
      reader.releaseLock();
      await compressed.cancel().catch(() => undefined);
    }
    yield pngChunk("IEND", new Uint8Array(0));
  }
  return pullStream(png());
}
