// TIFF decoding into the engine's planar float image: 8/16/32-bit integer and 32/64-bit float
// samples, uncompressed/LZW/Deflate/PackBits, strips or tiles, chunky or planar, multi-page,
// OME-TIFF and ImageJ hyperstacks (see tiff-hyperstack.ts), classic TIFF and BigTIFF.
import {
  checkImageSize,
  describeTiffPage,
  ImageDecodeError,
  checkTiffBlock,
  tiffPageLayout,
  type PageLayout,
  type SampleFormat,
  tiffBlockBytes,
  type TiffPage,
} from "../../../schema/image-formats/index.ts";
import { selectChannels, type DecodedImage, type DecodeOptions, type ImageProbe } from "./decoded-image.ts";
import { decompress } from "./tiff-codecs.ts";
import { readTiffFile, stringOf, Tag, type TiffFile } from "./tiff-directory.ts";
import { undoPredictor } from "./tiff-predictor.ts";

/** A page's geometry (schema/image-formats' rules) and where its data blocks lie. */
interface PageInfo extends TiffPage {
  offsets: readonly number[];
  byteCounts: readonly number[] | undefined;
}

function describePage(file: TiffFile, index: number): PageInfo {
  const dir = file.directory(index);
  const page = describeTiffPage(dir, index);
  const offsets = dir.numbers(page.tiled ? Tag.TileOffsets : Tag.StripOffsets)!;
  const byteCounts = dir.numbers(page.tiled ? Tag.TileByteCounts : Tag.StripByteCounts);
  const info = { ...page, offsets, byteCounts };
  checkBlocks(file, info, index);
  return info;
}

/**
 * Before any pixel buffer is allocated: every block lies inside the file and is long enough to
 * decode to its pixels, so a forged size with tiny data fails here instead of allocating the image.
 */
function checkBlocks(file: TiffFile, info: PageInfo, page: number): void {
  for (let b = 0; b < info.blocks; b++) checkTiffBlock(info, page, b, info.offsets[b]!, info.byteCounts?.[b], file.bytes.length);
}

interface TiffLayout {
  file: TiffFile;
  layout: PageLayout;
  first: PageInfo;
}

function layoutOf(bytes: Uint8Array): TiffLayout {
  const file = readTiffFile(bytes);
  const first = describePage(file, 0);
  const layout = tiffPageLayout(stringOf(file.directory(0), Tag.ImageDescription), file.pageCount, first.samplesPerPixel);
  return { file, layout, first };
}

export function probeTiff(bytes: Uint8Array): ImageProbe {
  const { layout, first } = layoutOf(bytes);
  return {
    format: "tiff",
    width: first.width,
    height: first.height,
    channels: layout.channelPages * first.samplesPerPixel,
    bitDepth: first.bitsPerSample,
    sampleFormat: first.sampleFormat,
    pages: layout.planes,
  };
}

export function decodeTiff(bytes: Uint8Array, options: DecodeOptions = {}): DecodedImage {
  const { file, layout, first } = layoutOf(bytes);
  const plane = options.page ?? 0;
  if (!Number.isInteger(plane) || plane < 0 || plane >= layout.planes) {
    throw new ImageDecodeError(`page ${plane} does not exist (file has ${layout.planes} plane${layout.planes === 1 ? "" : "s"})`);
  }
  // Channels are counted from the first page's samples; a plain stack's planes may differ in size,
  // so the selected page (not page 0) defines the geometry there.
  const geometry = layout.kind === "plain" ? describePage(file, layout.pageOf(plane, 0)) : first;
  const spp = geometry.samplesPerPixel;
  const wanted = selectChannels(layout.channelPages * spp, options.channels);
  const { width, height } = geometry;
  checkImageSize(width, height, wanted.length);
  const data = new Float32Array(wanted.length * width * height);

  // Group the wanted channels by page so each page is decompressed once.
  const byPage = new Map<number, { sample: number; target: number }[]>();
  wanted.forEach((channel, target) => {
    const page = layout.pageOf(plane, Math.floor(channel / spp));
    if (page >= file.pageCount) throw new ImageDecodeError(`TIFF page ${page} is missing`);
    const list = byPage.get(page) ?? [];
    list.push({ sample: channel % spp, target });
    byPage.set(page, list);
  });
  for (const [page, samples] of byPage) {
    const info = page === 0 ? first : describePage(file, page);
    if (info.width !== width || info.height !== height || info.samplesPerPixel !== spp || info.bitsPerSample !== geometry.bitsPerSample) {
      throw new ImageDecodeError(`TIFF page ${page} differs in size or sample layout from the other channels`);
    }
    decodePage(file, info, samples, data);
  }
  return { width, height, channels: wanted.length, bitDepth: geometry.bitsPerSample, sampleFormat: geometry.sampleFormat, data };
}

type SampleReader = (view: DataView, at: number) => number;

function sampleReader(bits: number, format: SampleFormat, le: boolean): SampleReader {
  if (format === "float") return bits === 32 ? (v, at) => v.getFloat32(at, le) : (v, at) => v.getFloat64(at, le);
  if (format === "int") {
    if (bits === 8) return (v, at) => v.getInt8(at);
    return bits === 16 ? (v, at) => v.getInt16(at, le) : (v, at) => v.getInt32(at, le);
  }
  if (bits === 8) return (v, at) => v.getUint8(at);
  return bits === 16 ? (v, at) => v.getUint16(at, le) : (v, at) => v.getUint32(at, le);
}

function decodePage(file: TiffFile, info: PageInfo, samples: { sample: number; target: number }[], out: Float32Array): void {
  const { width, height, blockWidth, blockHeight, samplesPerPixel: spp, planar } = info;
  const bytesPerSample = info.bitsPerSample / 8;
  const across = Math.ceil(width / blockWidth);
  const down = Math.ceil(height / blockHeight);
  const perPlane = across * down;
  const sppInBlock = planar ? 1 : spp;
  const read = sampleReader(info.bitsPerSample, info.sampleFormat, file.littleEndian);
  const whiteLevel = info.whiteIsZero && info.sampleFormat === "uint" ? 2 ** info.bitsPerSample - 1 : -1;
  const planeSize = width * height;

  const sampleGroups = planar ? samples.map((s) => [s]) : [samples];
  for (const group of sampleGroups) {
    const planeOffset = planar ? group[0]!.sample * perPlane : 0;
    for (let by = 0; by < down; by++) {
      for (let bx = 0; bx < across; bx++) {
        const blockIndex = planeOffset + by * across + bx;
        // Strips at the bottom hold only the remaining rows; tiles are always full size.
        const rows = info.tiled ? blockHeight : Math.min(blockHeight, height - by * blockHeight);
        const block = readBlock(file, info, blockIndex);
        undoPredictor(info.predictor, block, blockWidth, rows, sppInBlock, bytesPerSample, file.littleEndian);
        const view = new DataView(block.buffer, block.byteOffset, block.byteLength);
        const x0 = bx * blockWidth;
        const y0 = by * blockHeight;
        const xEnd = Math.min(width, x0 + blockWidth);
        const yEnd = Math.min(height, y0 + rows);
        for (const { sample, target } of group) {
          const sampleIndex = planar ? 0 : sample;
          const base = target * planeSize;
          for (let y = y0; y < yEnd; y++) {
            let at = ((y - y0) * blockWidth * sppInBlock + sampleIndex) * bytesPerSample;
            const step = sppInBlock * bytesPerSample;
            let o = base + y * width + x0;
            for (let x = x0; x < xEnd; x++, at += step, o++) {
              const value = read(view, at);
              out[o] = whiteLevel >= 0 ? whiteLevel - value : value;
            }
          }
        }
      }
    }
  }
}

function readBlock(file: TiffFile, info: PageInfo, index: number): Uint8Array {
  const offset = info.offsets[index]!;
  const { full, expected } = tiffBlockBytes(info, index);
  const count = info.byteCounts?.[index] ?? expected;
  const raw = file.bytes.subarray(offset, offset + count);
  if (info.compression === 1) {
    if (count < expected) throw new ImageDecodeError(`TIFF truncated: data block ${index} has ${count} of ${expected} bytes`);
    // Predictors work in place, so never hand out a view of the caller's bytes.
    return info.predictor === 1 ? raw.subarray(0, expected) : raw.slice(0, expected);
  }
  return decompress(info.compression, raw, expected, full);
}
