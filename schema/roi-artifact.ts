// The ROI artifact: one file per segmentation, written once by the GPU runner, read by every export.
// This comment is the contract; the writer (common/roi-artifact/writer.ts) and the reader
// (common/roi-artifact/reader.ts) implement it and nothing else does.
//
// Byte layout, versions 1 and 2 (version 2 adds what is marked "v2"; readers read both, writers
// write version 1 unless a v2 field is present, so an artifact without intensities stays the
// version-1 file it always was). Fixed-width integers and floats are little-endian; "varint" is unsigned
// LEB128 (7 bits per byte, low groups first, high bit = more follows, at most 8 bytes); "zigzag"
// maps a signed integer n to the varint 2n (n >= 0) or -2n-1 (n < 0).
//
//   artifact = header chunk* end
//
//   header
//     0   4  magic "CSRA" (43 53 52 41)
//     4   2  u16 format version = 1 or 2
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
//         v2:  u32 record flags: bit 0 = every ROI record carries intensities; bit 1 = every ROI
//              record carries its cell (a prediction's cell expansion); other bits must be 0
//         v2:  u16 C = channel count (>= 1 when bit 0 is set, else 0)
//         v2:  C times u16 n + n bytes UTF-8 channel name (the file's, e.g. OME-XML's, else "c0", "c1", ...)
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
//     v2, flag bit 0: C times 6 f64: the channel's mean, median, standard deviation (ddof 0), min,
//       max and sum of the original pixel values inside the outline (INTENSITY_STATS, schema/roi.ts)
//     v2, flag bit 1: the nucleus's cell, as the record above without its intensities: varint
//       area_px, f64 perimeter_px, f64 centroid_x, f64 centroid_y, varint bbox_x, bbox_y, bbox_w,
//       bbox_h, varint V (>= 3), V zigzag pairs (the first relative to the cell's (bbox_x, bbox_y));
//       then with flag bit 0, C times 6 f64 of the cytoplasm (the cell's pixels less the nucleus's;
//       NaN where there are none). The cell's box holds the nucleus's; cells do not overlap.
//
// Invariants the writer enforces and the reader checks (exports rely on them): ROIs are in the
// engine's raster order so bbox_y never decreases; vertices are integers inside
// [0, width] x [0, height]; the polygon's extent is exactly the bounding box; counts match the
// header. A file breaking any of them, or cut short, or with a bad CRC, is a RoiArtifactError.

import type { Roi } from "./roi.ts";

export const ROI_ARTIFACT_MAGIC = new Uint8Array([0x43, 0x53, 0x52, 0x41]);
/** The versions this code reads; it writes the first unless a version-2 field is present. */
export const ROI_ARTIFACT_VERSION = 1;
export const ROI_ARTIFACT_VERSION_2 = 2;
/** Record flag bit 0 (version 2): records carry INTENSITY_STATS per channel. */
export const ROI_ARTIFACT_FLAG_INTENSITY = 1;
/** Record flag bit 1 (version 2): records carry the nucleus's cell (Roi.cell). */
export const ROI_ARTIFACT_FLAG_CELLS = 2;
/** The most channels a header may name (each costs 48 bytes a record). */
export const ROI_ARTIFACT_MAX_CHANNELS = 64;
export const ROI_ARTIFACT_MAX_HEADER_BODY = 65_536;
export const ROI_ARTIFACT_MAX_CHUNK_PAYLOAD = 4 * 1024 * 1024;
/** The writer closes a chunk once its payload passes this size. */
export const ROI_ARTIFACT_TARGET_CHUNK_PAYLOAD = 64 * 1024;

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
  /**
   * Version 2: the image's channels, whose INTENSITY_STATS every ROI record carries (Roi.intensity);
   * absent or empty for an artifact without intensities (version 1).
   */
  channelNames?: string[];
  /** Version 2: every ROI carries its cell (Roi.cell), grown by the prediction's cell expansion. */
  cells?: boolean;
}

export interface RoiArtifactContents {
  header: RoiArtifactHeader;
  /** The ROIs in file order; read once. */
  rois: AsyncIterableIterator<Roi>;
  /** Stops reading and releases the stream, whether or not any ROI was read. */
  cancel(): Promise<void>;
}

/** A malformed, truncated or inconsistent artifact, or ROIs the writer refuses to store. */
export class RoiArtifactError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "RoiArtifactError";
  }
}
