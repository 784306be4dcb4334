// Rectangles of a TIFF or BigTIFF read through ranged reads: the header and the directories of the
// pages used are read in small cached reads, then each region reads only the strips or tiles it
// intersects (uncompressed ones only the rows, and columns, it needs), merged into few reads, and
// decodes them with the whole-image decoder's block code (tiff-blocks.ts). The image may exceed
// MAX_SAMPLES; each block is bounded instead (MAX_TIFF_BLOCK_BYTES), and each region (checkRegion).
import { checkTiffBlock, Compression, ImageDecodeError, MAX_TIFF_BLOCK_BYTES, type PageLayout, Tag, tiffPageLayout } from "../../schema/image-formats/index.ts";
import { cachedSource, type RangeRead, readRanges } from "./byte-ranges.ts";
import { BlockCache } from "./block-cache.ts";
import type { ByteSource } from "./byte-source.ts";
import { checkRegion, type ImageRegions } from "./region.ts";
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
  samplesInBlock,
  StoredBytesTally,
} from "./tiff-blocks.ts";
import { parseSource } from "./header-parse.ts";
import { openTiffSource, stringOf } from "./tiff-directory.ts";
import { readSlideFacts, subIfdLevels } from "./tiff-slide.ts";
import { undoPredictor } from "./tiff-predictor.ts";
import { mosaicOfPage, mosaicTilesIn, placedCells, type TileMosaic } from "./tile-mosaic.ts";

/** Decoded blocks kept for the next regions (neighbouring regions share edge tiles, a strip spans many). */
const BLOCK_CACHE_BYTES = 64 * 1024 * 1024;

interface TiffRegionOptions {
  /** Plane to read (default 0). */
  page?: number;
  /** A reduced level read as an image of its own (readLevel): a slide's level page, or a SubIFD at its offset. */
  level?: { page: number } | { at: number };
}

export async function openTiffRegions(source: ByteSource, options: TiffRegionOptions = {}): Promise<ImageRegions> {
  const { level } = options;
  const cached = cachedSource(source);
  const file = await openTiffSource(cached);
  const infos = new Map<number, Promise<PageInfo>>();
  // Every page read counts its compressed blocks' stored bytes once, against the file's size.
  const tally = new StoredBytesTally(source.size);
  const infoOf = (page: number): Promise<PageInfo> => {
    let info = infos.get(page);
    if (!info) {
      // A SubIFD level is the image's one page.
      const directory = level && "at" in level ? file.directoryAt(level.at) : file.directory(page);
      info = directory.then((dir) => {
        const described = pageInfo(dir, page, file.littleEndian, { regions: true });
        tally.add(page, described);
        return described;
      });
      infos.set(page, info);
    }
    return info;
  };
  const firstPage = await file.directory(0);
  const slide = await parseSource(readSlideFacts(file, source.size, firstPage), cached);
  // A reduced level (through readLevel) is read as a one-page image of its own.
  const layout: PageLayout =
    level === undefined
      ? tiffPageLayout(stringOf(firstPage, Tag.ImageDescription), file.pageCount, firstPage.numbers(Tag.SamplesPerPixel)?.[0] ?? 1, slide)
      : { kind: "plain", channelPages: 1, planes: 1, pageOf: () => ("page" in level ? level.page : 0) };
  const plane = options.page ?? 0;
  if (!Number.isInteger(plane) || plane < 0 || plane >= layout.planes) {
    throw new ImageDecodeError(`page ${plane} does not exist (file has ${layout.planes} plane${layout.planes === 1 ? "" : "s"})`);
  }
  // As in decodeTiff: a plain stack's selected page defines the geometry, else the first page (a slide's full resolution) does.
  const geometryPage = layout.kind === "plain" ? layout.pageOf(plane, 0) : layout.pageOf(0, 0);
  const geometry = await infoOf(geometryPage);
  const pyramid: ({ width: number; height: number } & ({ page: number } | { at: number }))[] =
    level !== undefined
      ? []
      : slide && layout.kind === "slide"
        ? slide.levels
        : await parseSource(subIfdLevels(file, source.size, await file.directory(geometryPage)), cached);
  const spp = geometry.samplesPerPixel;
  const cache = new BlockCache(BLOCK_CACHE_BYTES);
  // A slide level whose tiles overlap is read laid out (tile-mosaic.ts); a level read through readLevel is one too.
  const mosaic = layout.kind === "slide" || level !== undefined ? mosaicOfPage(slide, geometryPage, geometry) : null;
  const image = { width: (mosaic ?? geometry).width, height: (mosaic ?? geometry).height, channels: layout.channelPages * spp };
  // Compressed strips span the image's width: a region decodes whole strips, so the blocks of a band
  // share them, and the decoded strips are kept for a band's rows (uncompressed ones are read by rows).
  const strips = !geometry.tiled && geometry.compression !== Compression.None;
  const rowBytes = geometry.width * image.channels * Math.ceil(geometry.bitsPerSample / 8);
  return {
    ...image,
    ...(strips && {
      rowBytes,
      keepRows(rows: number) {
        // A band's rows, and the strips cut by its top and bottom edges.
        cache.resize((Math.min(rows, geometry.height) + 2 * geometry.blockHeight) * rowBytes);
      },
    }),
    bitDepth: geometry.bitsPerSample,
    sampleFormat: geometry.sampleFormat,
    format: "tiff",
    pages: layout.planes,
    levels: pyramid.map(({ width, height }) => ({ width, height })),
    // A level is one page: a SubIFD pyramid of one channel's pages per channel (OME-TIFF's) is read from its full resolution.
    ...(pyramid.length > 0 &&
      layout.channelPages === 1 && {
        readLevel: (index: number) => {
          const reduced = pyramid[index];
          if (!reduced) throw new RangeError(`level ${index} does not exist (the image has ${pyramid.length} reduced levels)`);
          return openTiffRegions(source, { level: "page" in reduced ? { page: reduced.page } : { at: reduced.at } });
        },
      }),
    async readRegion(x, y, w, h, regionOptions) {
      const wanted = checkRegion(image, x, y, w, h, regionOptions);
      const rect: Rect = { x, y, width: w, height: h };
      const data = new Float32Array(wanted.length * w * h);
      const reads: RangeRead[] = [];
      for (const { page, samples } of samplesByPage(layout, plane, spp, wanted, file.pageCount)) {
        const info = await infoOf(page);
        checkSameLayout(info, geometry, page);
        planBlocks({ info, page, samples, rect, out: data, fileSize: source.size, cache, mosaic }, reads);
      }
      await readRanges(source, reads);
      return { width: w, height: h, channels: wanted.length, bitDepth: geometry.bitsPerSample, sampleFormat: geometry.sampleFormat, data };
    },
  };
}

interface BlockPlan {
  info: PageInfo;
  page: number;
  samples: { sample: number; target: number }[];
  rect: Rect;
  out: Float32Array;
  fileSize: number;
  cache: BlockCache;
  mosaic: TileMosaic | null;
}

/** Lists the reads a region needs of one page: the blocks it intersects, or their rows if uncompressed. */
function planBlocks(plan: BlockPlan, reads: RangeRead[]): void {
  const { info, page, samples, rect, out, fileSize, cache, mosaic } = plan;
  const { across, perPlane } = blockGrid(info);
  const tiles = mosaic && mosaicTilesIn(mosaic, rect);
  const [bx0, bx1] = tiles?.columns ?? [Math.floor(rect.x / info.blockWidth), Math.floor((rect.x + rect.width - 1) / info.blockWidth)];
  const [by0, by1] = tiles?.rows ?? [Math.floor(rect.y / info.blockHeight), Math.floor((rect.y + rect.height - 1) / info.blockHeight)];
  const place = (index: number, block: Uint8Array, group: { sample: number; target: number }[]) => {
    for (const pixels of mosaic ? placedCells(info, mosaic, index, block) : [blockPixels(info, index, block)]) copyPixels(info, pixels, group, rect, out);
  };
  // A planar page keeps each sample in blocks of its own.
  for (const group of info.planar ? samples.map((s) => [s]) : [samples]) {
    const planeStart = info.planar ? group[0]!.sample * perPlane : 0;
    for (let by = by0; by <= by1; by++) {
      for (let bx = bx0; bx <= bx1; bx++) {
        const index = planeStart + by * across + bx;
        const offset = info.offsets[index]!;
        const count = checkTiffBlock(info, page, index, offset, info.byteCounts?.[index], fileSize);
        if (info.compression === Compression.None && !mosaic) {
          planRows(info, index, offset, group, rect, out, reads);
          continue;
        }
        if (count > MAX_TIFF_BLOCK_BYTES) {
          throw new ImageDecodeError(
            `TIFF page ${page} data block ${index} stores ${count} bytes, more than the ${MAX_TIFF_BLOCK_BYTES} a region read allows`,
            "too-large",
          );
        }
        const key = `${page}:${index}`;
        const cached = cache.get(key);
        if (cached) {
          place(index, cached, group);
          continue;
        }
        reads.push({
          offset,
          length: count,
          use: (stored) => {
            const block = decodeBlock(info, index, stored);
            cache.set(key, block);
            place(index, block, group);
          },
        });
      }
    }
  }
}

/**
 * An uncompressed block is read by rows, each only as far as the region's columns (from the row's
 * start when a predictor makes each sample depend on the ones before it).
 */
function planRows(
  info: PageInfo,
  index: number,
  offset: number,
  group: { sample: number; target: number }[],
  rect: Rect,
  out: Float32Array,
  reads: RangeRead[],
) {
  const block = blockPixels(info, index, new Uint8Array(0));
  const pixelBytes = samplesInBlock(info) * (info.bitsPerSample / 8);
  const xs = Math.max(rect.x, block.x0);
  const xe = Math.min(rect.x + rect.width, block.x0 + block.columns, info.width);
  const ys = Math.max(rect.y, block.y0);
  const ye = Math.min(rect.y + rect.height, block.y0 + block.rows);
  const [c0, c1] = info.predictor === 1 ? [xs - block.x0, xe - block.x0] : [0, info.blockWidth];
  for (let y = ys; y < ye; y++) {
    reads.push({
      offset: offset + (y - block.y0) * block.rowStride + c0 * pixelBytes,
      length: (c1 - c0) * pixelBytes,
      use: (stored) => {
        let row = stored;
        if (info.predictor !== 1) {
          row = stored.slice();
          undoPredictor(info.predictor, row, info.blockWidth, 1, samplesInBlock(info), info.bitsPerSample / 8, info.littleEndian);
        }
        copyPixels(info, { bytes: row, x0: block.x0 + c0, y0: y, columns: c1 - c0, rows: 1, rowStride: row.length }, group, rect, out);
      },
    });
  }
}
