// Rectangles of a DICOM whole-slide level read through ranged reads: the structure first
// (dicom-structure.ts), then each region reads and decodes only the frames whose tiles it meets,
// merged into few reads, each frame bounded before it is decoded. A tile a sparse level does not
// store reads as background: white glass for a color slide, black for fluorescence.
import { ImageDecodeError, MAX_DICOM_FRAME_BYTES } from "../../schema/image-formats/index.ts";
import { BlockCache } from "./block-cache.ts";
import { type RangeRead, readRanges } from "./byte-ranges.ts";
import type { ByteSource } from "./byte-source.ts";
import { type DicomStructure, ITEM_TAG, readDicomStructure, SEQUENCE_DELIMITER_TAG } from "./dicom-structure.ts";
import { parseSource } from "./header-parse.ts";
import { decodeJpegTile } from "./jpeg-tile.ts";
import { decodeJpeg2000Tile } from "./jpeg2000-tile.ts";
import { checkRegion, type ImageRegions } from "./region.ts";

/** Decoded frames kept for the next regions (neighbouring regions share edge tiles). */
const FRAME_CACHE_BYTES = 64 * 1024 * 1024;

/** Bytes read at once while walking the items of a file without an offset table. */
const WALK_WINDOW_BYTES = 4 * 1024 * 1024;

/** Where encapsulated frames lie in the file: [starts[f], ends[f]) holds frame f's items. */
interface FrameSpans {
  starts: Float64Array;
  ends: Float64Array;
}

const corrupt = (why: string) => new ImageDecodeError(`DICOM corrupt: ${why}`);

export async function openDicomRegions(source: ByteSource): Promise<ImageRegions> {
  const structure = await parseSource(readDicomStructure(source.size), source);
  const { level } = structure;
  const spans = level.coding === "native" ? null : await frameSpans(structure, source);
  const cache = new BlockCache(FRAME_CACHE_BYTES);
  const tiles = level.tilesAcross * level.tilesDown;
  const frameBytes = level.tileWidth * level.tileHeight * level.samplesPerPixel * (level.bitsAllocated / 8);
  // A tile a sparse level leaves out is glass: white in a color slide, dark in fluorescence.
  const background = level.samplesPerPixel === 3 ? 255 : 0;
  const image = { width: level.width, height: level.height, channels: level.channels };

  /** Frame f's bytes as stored: native, or its encapsulated fragments joined. */
  const frameRead = (frame: number): { offset: number; length: number } => {
    if (!spans) return { offset: level.pixelDataOffset + frame * frameBytes, length: frameBytes };
    const length = spans.ends[frame]! - spans.starts[frame]!;
    if (length > MAX_DICOM_FRAME_BYTES + 8) {
      throw new ImageDecodeError(`DICOM frame ${frame + 1} stores ${length} bytes, more than the ${MAX_DICOM_FRAME_BYTES} a frame may hold`, "too-large");
    }
    return { offset: spans.starts[frame]!, length };
  };

  const decodeFrame = (frame: number, stored: Uint8Array): Uint8Array => {
    const shape = { columns: level.tileWidth, rows: level.tileHeight, maxRows: level.tileHeight, samples: level.samplesPerPixel };
    if (level.coding === "native") return stored.slice();
    const stream = joinFragments(stored, frame);
    if (level.coding === "jpeg") return decodeJpegTile(stream, undefined, { ...shape, what: "DICOM JPEG frame", ycbcr: level.photometric.startsWith("YBR") });
    // YBR_ICT and YBR_RCT are undone by the codestream's own transform; YBR_FULL is coded as it is.
    const ycbcr = level.photometric === "YBR_FULL" || level.photometric === "YBR_FULL_422";
    return decodeJpeg2000Tile(stream, { ...shape, what: "DICOM JPEG 2000 frame", ycbcr });
  };

  return {
    ...image,
    bitDepth: level.bitsAllocated,
    sampleFormat: "uint",
    format: "dicom",
    pages: 1,
    levels: [],
    async readRegion(x, y, w, h, options) {
      const wanted = checkRegion(image, x, y, w, h, options);
      const out = new Float32Array(wanted.length * w * h);
      const [tx0, tx1] = [Math.floor(x / level.tileWidth), Math.floor((x + w - 1) / level.tileWidth)];
      const [ty0, ty1] = [Math.floor(y / level.tileHeight), Math.floor((y + h - 1) / level.tileHeight)];
      // Each frame the region needs, with the channels it gives: a color frame all of them, a fluorescence frame its path's one.
      const uses = new Map<number, { tile: number; channels: { target: number; sample: number }[] }>();
      for (let ty = ty0; ty <= ty1; ty++) {
        for (let tx = tx0; tx <= tx1; tx++) {
          const tile = ty * level.tilesAcross + tx;
          wanted.forEach((channel, target) => {
            const [group, sample] = level.samplesPerPixel === 1 ? [channel, 0] : [0, channel];
            const frame = level.frameOf[group * tiles + tile]!;
            if (frame < 0) {
              fillTile(tile, target, background);
              return;
            }
            let use = uses.get(frame);
            if (!use) uses.set(frame, (use = { tile, channels: [] }));
            use.channels.push({ target, sample });
          });
        }
      }
      const reads: RangeRead[] = [];
      for (const [frame, use] of uses) {
        const cached = cache.get(String(frame));
        if (cached) {
          copyTile(cached, use.tile, use.channels);
          continue;
        }
        reads.push({
          ...frameRead(frame),
          use: (stored) => {
            const pixels = decodeFrame(frame, stored);
            cache.set(String(frame), pixels);
            copyTile(pixels, use.tile, use.channels);
          },
        });
      }
      await readRanges(source, reads);
      return { width: w, height: h, channels: wanted.length, bitDepth: level.bitsAllocated, sampleFormat: "uint", data: out };

      /** The part of tile `tile` inside the region, in the region's coordinates. */
      function overlap(tile: number) {
        const [left, top] = [(tile % level.tilesAcross) * level.tileWidth, Math.floor(tile / level.tilesAcross) * level.tileHeight];
        const [xs, xe] = [Math.max(x, left), Math.min(x + w, left + level.tileWidth)];
        const [ys, ye] = [Math.max(y, top), Math.min(y + h, top + level.tileHeight)];
        return { left, top, xs, xe, ys, ye };
      }

      function fillTile(tile: number, target: number, value: number): void {
        const { xs, xe, ys, ye } = overlap(tile);
        for (let row = ys; row < ye; row++) {
          const at = (target * h + (row - y)) * w;
          out.fill(value, at + xs - x, at + xe - x);
        }
      }

      function copyTile(pixels: Uint8Array, tile: number, channels: { target: number; sample: number }[]): void {
        const { left, top, xs, xe, ys, ye } = overlap(tile);
        const spp = level.samplesPerPixel;
        const wide = level.bitsAllocated === 16;
        const plane = level.tileWidth * level.tileHeight;
        for (const { target, sample } of channels) {
          for (let row = ys; row < ye; row++) {
            const at = (target * h + (row - y)) * w - x;
            for (let col = xs; col < xe; col++) {
              const pixel = (row - top) * level.tileWidth + (col - left);
              // Native color frames may keep each sample's plane apart (PlanarConfiguration 1).
              const index = level.planar ? sample * plane + pixel : pixel * spp + sample;
              out[at + col] = wide ? pixels[2 * index]! | (pixels[2 * index + 1]! << 8) : pixels[index]!;
            }
          }
        }
      }
    },
  };
}

/**
 * Where each encapsulated frame lies: from an offset table, each frame running to the next one's
 * start (the last to its item's end); without one, by walking the items, one per frame.
 */
async function frameSpans(structure: DicomStructure, source: ByteSource): Promise<FrameSpans> {
  const { frames } = structure.level;
  if (!structure.frameStarts) return walkItems(source, structure.firstItem, frames);
  const starts = structure.frameStarts;
  const ends = new Float64Array(frames);
  for (let frame = 0; frame + 1 < frames; frame++) ends[frame] = starts[frame + 1]!;
  const last = starts[frames - 1]!;
  const header = itemHeader(await source.read(last, 8), 0);
  if (header.tag !== ITEM_TAG || last + 8 + header.length > source.size) throw corrupt(`frame ${frames}'s item lies outside the file`);
  ends[frames - 1] = last + 8 + header.length;
  return { starts, ends };
}

/**
 * The items after the Basic Offset Table, one frame each, read in windows of WALK_WINDOW_BYTES:
 * a file without an offset table costs one pass over its Pixel Data when it is opened.
 */
async function walkItems(source: ByteSource, firstItem: number, frames: number): Promise<FrameSpans> {
  const starts = new Float64Array(frames);
  const ends = new Float64Array(frames);
  let window: Uint8Array = new Uint8Array(0);
  let windowStart = 0;
  let at = firstItem;
  for (let frame = 0; frame < frames; frame++) {
    if (at + 8 > source.size) throw corrupt(`its Pixel Data ends after ${frame} of its ${frames} frames`);
    if (at < windowStart || at + 8 > windowStart + window.length) {
      windowStart = at;
      window = await source.read(at, Math.min(WALK_WINDOW_BYTES, source.size - at));
    }
    const { tag, length } = itemHeader(window, at - windowStart);
    if (tag === SEQUENCE_DELIMITER_TAG) throw corrupt(`its Pixel Data ends after ${frame} of its ${frames} frames`);
    if (tag !== ITEM_TAG) throw corrupt(`frame ${frame + 1} does not start with an item`);
    if (at + 8 + length > source.size) throw corrupt(`frame ${frame + 1}'s item runs past the end of the file`);
    starts[frame] = at;
    ends[frame] = at = at + 8 + length;
  }
  return { starts, ends };
}

function itemHeader(bytes: Uint8Array, at: number): { tag: number; length: number } {
  const view = new DataView(bytes.buffer, bytes.byteOffset + at, 8);
  return { tag: view.getUint32(0, true), length: view.getUint32(4, true) };
}

/** A frame's codestream: the values of its items (one, usually; a view then, not a copy). */
function joinFragments(stored: Uint8Array, frame: number): Uint8Array {
  const fragments: Uint8Array[] = [];
  for (let at = 0; at + 8 <= stored.length; ) {
    const { tag, length } = itemHeader(stored, at);
    if (tag === SEQUENCE_DELIMITER_TAG) break;
    if (tag !== ITEM_TAG || at + 8 + length > stored.length) throw corrupt(`frame ${frame + 1}'s fragments do not fit its span`);
    fragments.push(stored.subarray(at + 8, at + 8 + length));
    at += 8 + length;
  }
  if (fragments.length === 1) return fragments[0]!;
  const joined = new Uint8Array(fragments.reduce((sum, f) => sum + f.length, 0));
  let offset = 0;
  for (const fragment of fragments) {
    joined.set(fragment, offset);
    offset += fragment.length;
  }
  return joined;
}
