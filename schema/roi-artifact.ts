// The ROI artifact: one file per segmentation, written once by the GPU runner, read by every export.
// This comment is the contract; the writer (roi-artifact-writer.ts) and the reader
// (roi-artifact-reader.ts) implement it and nothing else does.
//
// Byte layout, version 1. Fixed-width integers and floats are little-endian; "varint" is unsigned
// LEB128 (7 bits per byte, low groups first, high bit = more follows, at most 8 bytes); "zigzag"
// maps a signed integer n to the varint 2n (n >= 0) or -2n-1 (n < 0).
//
//   artifact = header chunk* end
//
//   header
//     0   4  magic "CSRA" (43 53 52 41)
//     4   2  u16 format version = 1
//     6   2  u16 reserved, 0
//     8   4  u32 B = length of the header body that follows (<= 65,536)
//     12  B  header body:
//              u32 image width  (pixels, >= 1)
//              u32 image height (pixels, >= 1)
//              u32 ROI count
//              u32 total vertex count (sum of the ROIs' vertex counts)
//              f64 confluency (fraction of image pixels inside an ROI, 0..1)
//              u16 n + n bytes UTF-8 model name
//              u16 n + n bytes UTF-8 model version
//              (a later minor revision may append fields; readers skip body bytes they do not know)
//     12+B 4 u32 CRC-32 of bytes 0 .. 12+B (magic through body)
//
//   chunk (records are grouped so a reader holds one chunk, never the file)
//     u32 R = records in this chunk (>= 1)
//     u32 L = payload length in bytes (1 .. 4 MiB)
//     u32 CRC-32 of the payload
//     L bytes: R ROI records, back to back, filling the payload exactly
//
//   end: 12 zero bytes (R = 0, L = 0, CRC = 0), then the end of the file.
//
//   ROI record (the ROI's index is its position in the file: 0, 1, 2, ...)
//     varint area_px
//     f64    perimeter_px
//     f64    centroid_x
//     f64    centroid_y
//     varint bbox_x, bbox_y, bbox_w, bbox_h
//     varint V = vertex count (>= 3)
//     V pairs of zigzag varints (dx, dy): the first vertex relative to (bbox_x, bbox_y), every
//       later one relative to the vertex before it. Pixel-edge outlines move one axis at a time by
//       a few pixels, so most vertices take two bytes.
//
// Invariants the writer enforces and the reader checks (exports rely on them): ROIs are in the
// engine's raster order so bbox_y never decreases; vertices are integers inside
// [0, width] x [0, height]; the polygon's extent is exactly the bounding box; counts match the
// header. A file breaking any of them, or cut short, or with a bad CRC, is a RoiArtifactError.

import type { Roi } from "./roi.ts";

export const ROI_ARTIFACT_MAGIC = new Uint8Array([0x43, 0x53, 0x52, 0x41]);
export const ROI_ARTIFACT_VERSION = 1;
export const ROI_ARTIFACT_MAX_HEADER_BODY = 65_536;
export const ROI_ARTIFACT_MAX_CHUNK_PAYLOAD = 4 * 1024 * 1024;
/** The writer closes a chunk once its payload passes this size. */
export const ROI_ARTIFACT_TARGET_CHUNK_PAYLOAD = 64 * 1024;
export const ROI_ARTIFACT_CONTENT_TYPE = "application/vnd.cellseg.roi-artifact";

export interface RoiArtifactHeader {
  imageWidth: number;
  imageHeight: number;
  roiCount: number;
  /** Sum over the ROIs of polygon.length / 2. */
  vertexCount: number;
  /** Fraction of the image's pixels covered by ROIs, 0..1. */
  confluency: number;
  modelName: string;
  modelVersion: string;
}

export interface RoiArtifactContents {
  header: RoiArtifactHeader;
  /** The ROIs in file order; read once. */
  rois: AsyncIterableIterator<Roi>;
}

/** A malformed, truncated or inconsistent artifact, or ROIs the writer refuses to store. */
export class RoiArtifactError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "RoiArtifactError";
  }
}
