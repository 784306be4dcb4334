// What a TIFF's pages say of a whole slide (schema/image-formats/tiff-slides.ts holds each vendor's
// rules), and the reduced levels of any TIFF, as header-parse.ts requests. The upload probe, the
// whole-image decoder and the region reader all run these, so they agree on which page is the
// image; none of them reads the levels' pixels.
import {
  hamamatsuSlide,
  ImageDecodeError,
  isGenericSlide,
  leicaSlide,
  type NdpiPage,
  philipsPixelSize,
  type SlideFacts,
  slideVendorOf,
  Tag,
  ventanaLevel,
  ventanaScan,
  ventanaTileAdvance,
} from "../../schema/image-formats/index.ts";
import type { Parse } from "./header-parse.ts";
import { tileMosaic } from "./tile-mosaic.ts";
import { pageSize, readDirectory, stringOf, type TiffDirectory, type TiffStructure } from "./tiff-directory.ts";

/** Pages looked at for a slide's levels and associated images: slides have a handful. */
const MAX_SLIDE_PAGES = 32;

interface LevelSize {
  width: number;
  height: number;
}

const largestFirst = <Level extends LevelSize>(levels: Level[]) => levels.sort((a, b) => b.width * b.height - a.width * a.height);

/** The slide a TIFF holds, from its first page (`first`) and, as its vendor needs, the pages after; null if it is none. */
export function* readSlideFacts(structure: TiffStructure, size: number, first: TiffDirectory): Parse<SlideFacts | null> {
  const description = stringOf(first, Tag.ImageDescription);
  const vendor = slideVendorOf({ description, software: stringOf(first, Tag.Software), xmp: stringOf(first, Tag.XmlPacket) });
  const pages = structure.directories.slice(0, MAX_SLIDE_PAGES);
  if (structure.ndpi) {
    const described: NdpiPage[] = [];
    for (let page = 0; page < pages.length; page++) {
      const dir = page === 0 ? first : yield* readDirectory(structure, pages[page]!, size);
      described.push({ page, ...pageSize(dir), sourceLens: dir.numbers(Tag.NdpiSourceLens)?.[0], zOffset: dir.numbers(Tag.NdpiZOffset)?.[0] });
    }
    const slide = hamamatsuSlide(described);
    if (!slide) throw new ImageDecodeError("Hamamatsu NDPI corrupt: no page is a pyramid level (each has no objective, or is out of focus)");
    return { vendor: "hamamatsu", ...slide, pixelSize: null };
  }
  if (vendor === "leica") {
    const main = leicaSlide(description!);
    if (!main || main.page >= structure.directories.length) throw new ImageDecodeError("Leica SCN corrupt: its description names no main image in the file");
    return { vendor, ...main, levels: largestFirst(main.levels) };
  }
  if (vendor === "ventana") {
    const described: { level: number; page: number; size: LevelSize; tile: LevelSize; xmp: string | undefined }[] = [];
    for (let page = 0; page < pages.length; page++) {
      const dir = page === 0 ? first : yield* readDirectory(structure, pages[page]!, size);
      const level = ventanaLevel(stringOf(dir, Tag.ImageDescription));
      const tile = { width: dir.numbers(Tag.TileWidth)?.[0] ?? 0, height: dir.numbers(Tag.TileLength)?.[0] ?? 0 };
      if (level !== null) described.push({ level, page, size: pageSize(dir), tile, xmp: stringOf(dir, Tag.XmlPacket) });
    }
    const [full, ...reduced] = described.sort((a, b) => a.level - b.level);
    if (!full) throw new ImageDecodeError("Ventana BIF corrupt: no page is described as a level (level=0)");
    const xmp = [full.xmp, stringOf(first, Tag.XmlPacket)].find((packet) => packet?.includes("<iScan"));
    const advance = full.tile.width > 0 ? ventanaTileAdvance(full.xmp, full.tile) : null;
    const downsamples = new Map(described.map((d) => [d.page, Math.round(full.size.width / d.size.width)]));
    // Where the tiles overlap, each level is as large as its tiles laid out (tile-mosaic.ts).
    const laidOut = (d: (typeof described)[number]) =>
      (advance && tileMosaic({ ...d.size, blockWidth: d.tile.width, blockHeight: d.tile.height }, advance, downsamples.get(d.page)!)) || d.size;
    const levels = reduced.map((d) => {
      const { width, height } = laidOut(d);
      return { width, height, page: d.page };
    });
    return { vendor, page: full.page, levels: largestFirst(levels), ...ventanaScan(xmp), ...(advance && { tileOverlap: { advance, downsamples } }) };
  }
  if (vendor === null) {
    if (structure.directories.length < 2) return null;
    const second = yield* readDirectory(structure, structure.directories[1]!, size);
    if (!isGenericSlide(pageSize(first), pageSize(second))) return null;
  }
  // Aperio, Philips and generic pyramids: the full resolution first; the tiled pages after it are
  // levels, the stripped ones (thumbnail, label, macro, by Aperio's rule and OpenSlide's generic one) are not.
  const levels: SlideFacts["levels"] = [];
  for (let page = 1; page < pages.length; page++) {
    const dir = yield* readDirectory(structure, pages[page]!, size);
    if (dir.count(Tag.TileWidth) > 0) levels.push({ ...pageSize(dir), page });
  }
  const pixelSize = vendor === "philips" ? philipsPixelSize(description!) : null;
  return { vendor: vendor ?? "generic", page: 0, levels: largestFirst(levels), pixelSize, magnification: null };
}

/** The SubIFDs of a page (OME-TIFF's and libvips' pyramids) with where each lies, largest first; a level whose directory cannot be read is left out. */
export function* subIfdLevels(structure: TiffStructure, size: number, page: TiffDirectory): Parse<(LevelSize & { at: number })[]> {
  const levels: (LevelSize & { at: number })[] = [];
  for (const at of (page.numbers(Tag.SubIFDs) ?? []).slice(0, MAX_SLIDE_PAGES)) {
    try {
      const sub = yield* readDirectory(structure, at, size);
      const [width, height] = [sub.numbers(Tag.ImageWidth)?.[0], sub.numbers(Tag.ImageLength)?.[0]];
      if (width !== undefined && height !== undefined) levels.push({ width, height, at });
    } catch (error) {
      if (!(error instanceof ImageDecodeError)) throw error;
    }
  }
  return levels;
}
