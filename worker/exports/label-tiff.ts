// The label image as a 32-bit unsigned grayscale TIFF (TIFF 6.0, little-endian), for segmentations
// with more than 65,535 ROIs, whose labels do not fit a 16-bit PNG. Uncompressed and one strip:
// every size is known before the first pixel, so the header goes out first and rows stream after.

import type { RoiArtifactContents } from "../../schema/roi-artifact.ts";
import { LabelRowRenderer } from "../../schema/roi-raster.ts";
import { pullStream } from "./pull-stream.ts";

const ROWS_BATCH_BYTES = 64 * 1024;
const SHORT = 3;
const LONG = 4;

function tiffHeader(width: number, height: number): Uint8Array {
  const entries: [tag: number, type: number, value: number][] = [
    [256, LONG, width], // ImageWidth
    [257, LONG, height], // ImageLength
    [258, SHORT, 32], // BitsPerSample
    [259, SHORT, 1], // Compression: none
    [262, SHORT, 1], // PhotometricInterpretation: BlackIsZero
    [273, LONG, 0], // StripOffsets, set below
    [277, SHORT, 1], // SamplesPerPixel
    [278, LONG, height], // RowsPerStrip
    [279, LONG, width * height * 4], // StripByteCounts
    [339, SHORT, 1], // SampleFormat: unsigned integer
  ];
  const ifdOffset = 8;
  const ifdSize = 2 + 12 * entries.length + 4;
  const dataOffset = ifdOffset + ifdSize + ((4 - ((ifdOffset + ifdSize) % 4)) % 4);
  entries[5][2] = dataOffset;
  const out = new Uint8Array(dataOffset);
  const v = new DataView(out.buffer);
  v.setUint16(0, 0x4949, true); // "II"
  v.setUint16(2, 42, true);
  v.setUint32(4, ifdOffset, true);
  v.setUint16(ifdOffset, entries.length, true);
  entries.forEach(([tag, type, value], i) => {
    const at = ifdOffset + 2 + 12 * i;
    v.setUint16(at, tag, true);
    v.setUint16(at + 2, type, true);
    v.setUint32(at + 4, 1, true);
    if (type === SHORT) v.setUint16(at + 8, value, true);
    else v.setUint32(at + 8, value, true);
  });
  v.setUint32(ifdOffset + 2 + 12 * entries.length, 0, true); // no next IFD
  return out;
}

export function labelTiff(artifact: RoiArtifactContents): ReadableStream<Uint8Array> {
  const { imageWidth, imageHeight } = artifact.header;
  if (imageWidth * imageHeight * 4 + 256 > 0xffffffff) {
    throw new RangeError(`a ${imageWidth}x${imageHeight} 32-bit label image exceeds the 4 GiB of a classic TIFF`);
  }
  const renderer = new LabelRowRenderer(imageWidth, imageHeight, artifact.rois);
  const rowsPerChunk = Math.max(1, Math.floor(ROWS_BATCH_BYTES / (4 * imageWidth)));
  async function* tiff(): AsyncGenerator<Uint8Array> {
    try {
      yield tiffHeader(imageWidth, imageHeight);
      const labels = new Uint32Array(imageWidth);
      for (;;) {
        const chunk = new Uint8Array(rowsPerChunk * 4 * imageWidth);
        const view = new DataView(chunk.buffer);
        let filled = 0;
        while (filled < rowsPerChunk && (await renderer.next(labels))) {
          const at = filled * 4 * imageWidth;
          for (let x = 0; x < imageWidth; x++) view.setUint32(at + 4 * x, labels[x], true);
          filled++;
        }
        if (filled === 0) return;
        yield chunk.subarray(0, filled * 4 * imageWidth);
        if (filled < rowsPerChunk) return;
      }
    } finally {
      await renderer.close();
    }
  }
  return pullStream(tiff());
}
