// A TIFF's reduced-resolution levels, largest first, as header-parse.ts requests: a whole slide's
// tiled pages after the first (its thumbnail, label and macro are stored in strips, by Aperio's rule
// and OpenSlide's generic one), or the SubIFDs of the page read (OME-TIFF's and libvips' pyramids).
// The upload probe records them and the region reader lists them; neither reads their pixels.
import { ImageDecodeError, type PageLayout, Tag } from "../../schema/image-formats/index.ts";
import type { Parse } from "./header-parse.ts";
import { pageSize, readDirectory, type TiffDirectory, type TiffStructure } from "./tiff-directory.ts";

/** Levels read: pyramids have a handful. */
const MAX_LEVELS = 32;

export interface LevelSize {
  width: number;
  height: number;
}

export function* tiffLevels(structure: TiffStructure, size: number, kind: PageLayout["kind"], page: TiffDirectory): Parse<LevelSize[]> {
  const levels: LevelSize[] = [];
  if (kind === "slide") {
    for (const at of structure.directories.slice(1, MAX_LEVELS)) {
      const dir = yield* readDirectory(structure, at, size);
      if (dir.count(Tag.TileWidth) > 0) levels.push(pageSize(dir));
    }
    return levels.sort((a, b) => b.width * b.height - a.width * a.height);
  }
  for (const at of (page.numbers(Tag.SubIFDs) ?? []).slice(0, MAX_LEVELS)) {
    try {
      const sub = yield* readDirectory(structure, at, size);
      const [width, height] = [sub.numbers(Tag.ImageWidth)?.[0], sub.numbers(Tag.ImageLength)?.[0]];
      if (width !== undefined && height !== undefined) levels.push({ width, height });
    } catch (error) {
      // A level whose directory cannot be read is left out: the image itself is still read.
      if (!(error instanceof ImageDecodeError)) throw error;
    }
  }
  return levels;
}
