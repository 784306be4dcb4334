// TIFF decoding into the engine's planar float image: 8/16/32-bit integer and 32/64-bit float
// samples, uncompressed/LZW/Deflate/PackBits/JPEG, strips or tiles, chunky or planar, multi-page,
// OME-TIFF and ImageJ hyperstacks (see tiff-hyperstack.ts), classic TIFF and BigTIFF. The whole
// file is in memory here; tiff-regions.ts reads rectangles of a file through ranged reads, with the
// same block decoding (tiff-blocks.ts).
import { checkImageSize, checkTiffBlock, ImageDecodeError, type PageLayout, tiffBlockBytes, tiffPageLayout } from "../../schema/image-formats/index.ts";
import { selectChannels, type DecodedImage, type DecodeOptions } from "./decoded-image.ts";
import {
  blockGrid,
  blockPixels,
  checkSameLayout,
  copyPixels,
  decodeBlock,
  type PageInfo,
  pageInfo,
  type Rect,
  samplesByPage,
  StoredBytesTally,
} from "./tiff-blocks.ts";
import { parseBytes } from "./header-parse.ts";
import { readTiffFile, stringOf, Tag, type TiffFile } from "./tiff-directory.ts";
import { readSlideFacts } from "./tiff-slide.ts";
import { mosaicOfPage, placedCells, type TileMosaic } from "./tile-mosaic.ts";

function describePage(file: TiffFile, index: number, tally: StoredBytesTally): PageInfo {
  const info = pageInfo(file.directory(index), index, file.littleEndian);
  checkBlocks(file, info, index);
  tally.add(index, info);
  return info;
}

/**
 * Before any pixel buffer is allocated: every block lies inside the file and is long enough to
 * decode to its pixels, so a forged size with tiny data fails here instead of allocating the image;
 * and (the tally) the compressed blocks of the pages read do not share bytes beyond the file's size.
 */
function checkBlocks(file: TiffFile, info: PageInfo, page: number): void {
  for (let b = 0; b < info.blocks; b++) checkTiffBlock(info, page, b, info.offsets[b]!, info.byteCounts?.[b], file.bytes.length);
}

interface TiffLayout {
  file: TiffFile;
  layout: PageLayout;
  first: PageInfo;
  tally: StoredBytesTally;
  /** The full resolution's tiles laid out where they overlap (tile-mosaic.ts). */
  mosaic: TileMosaic | null;
}

function layoutOf(bytes: Uint8Array): TiffLayout {
  const file = readTiffFile(bytes);
  const tally = new StoredBytesTally(bytes.length);
  const firstPage = file.directory(0);
  const slide = parseBytes(readSlideFacts(file, bytes.length, firstPage), bytes);
  const layout = tiffPageLayout(stringOf(firstPage, Tag.ImageDescription), file.pageCount, firstPage.numbers(Tag.SamplesPerPixel)?.[0] ?? 1, slide);
  // The first page, or a slide's full resolution wherever its vendor keeps it.
  const first = describePage(file, layout.pageOf(0, 0), tally);
  return { file, layout, first, tally, mosaic: layout.kind === "slide" ? mosaicOfPage(slide, layout.pageOf(0, 0), first) : null };
}

export function decodeTiff(bytes: Uint8Array, options: DecodeOptions = {}): DecodedImage {
  const { file, layout, first, tally, mosaic } = layoutOf(bytes);
  const plane = options.page ?? 0;
  if (!Number.isInteger(plane) || plane < 0 || plane >= layout.planes) {
    throw new ImageDecodeError(`page ${plane} does not exist (file has ${layout.planes} plane${layout.planes === 1 ? "" : "s"})`);
  }
  // Channels are counted from the first page's samples; a plain stack's planes may differ in size,
  // so the selected page (not page 0) defines the geometry there.
  const geometry = layout.kind === "plain" ? describePage(file, layout.pageOf(plane, 0), tally) : first;
  const firstPage = layout.pageOf(0, 0);
  const wanted = selectChannels(layout.channelPages * geometry.samplesPerPixel, options.channels);
  const { width, height } = mosaic ?? geometry;
  checkImageSize(width, height, wanted.length);
  const data = new Float32Array(wanted.length * width * height);
  // Each page is decompressed once for all the channels it holds.
  for (const { page, samples } of samplesByPage(layout, plane, geometry.samplesPerPixel, wanted, file.pageCount)) {
    const info = page === firstPage ? first : describePage(file, page, tally);
    checkSameLayout(info, geometry, page);
    decodePage(file, info, samples, data, page === firstPage ? mosaic : null);
  }
  return { width, height, channels: wanted.length, bitDepth: geometry.bitsPerSample, sampleFormat: geometry.sampleFormat, data };
}

function decodePage(file: TiffFile, info: PageInfo, samples: { sample: number; target: number }[], out: Float32Array, mosaic: TileMosaic | null): void {
  const { width, height } = mosaic ?? info;
  const whole: Rect = { x: 0, y: 0, width, height };
  const { perPlane } = blockGrid(info);
  // A planar page keeps each sample in blocks of its own.
  const groups = info.planar ? samples.map((s) => [s]) : [samples];
  for (const group of groups) {
    const first = info.planar ? group[0]!.sample * perPlane : 0;
    for (let index = first; index < first + perPlane; index++) {
      const offset = info.offsets[index]!;
      const count = info.byteCounts?.[index] ?? tiffBlockBytes(info, index).expected;
      const block = decodeBlock(info, index, file.bytes.subarray(offset, offset + count));
      const pieces = mosaic ? placedCells(info, mosaic, index, block) : [blockPixels(info, index, block)];
      for (const pixels of pieces) copyPixels(info, pixels, group, whole, out);
    }
  }
}
