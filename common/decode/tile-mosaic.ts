// A slide level whose stored tiles overlap (Ventana BIF: schema/image-formats/ventana-overlaps.ts),
// laid out as OpenSlide's Ventana driver lays it out. Level 0's tiles ("cells") step by the tile
// advance; a reduced level's stored tile holds `perTile` x `perTile` of them, each shrunk by the
// level's downsample, stepping by the advance shrunk alike. A cell shows from its own step to the
// next cell's, where the next one covers it; the last column and row show whole. Cells start at
// whole pixels (the advance's multiples rounded down), so every pixel of the level comes from
// exactly one cell. The whole-image decoder and the region reader place blocks through this module,
// and the probe takes the level's size from it.
import type { SlideFacts, TileAdvance } from "../../schema/image-formats/index.ts";
import { blockGrid, blockPixels, type PageInfo, type Pixels, samplesInBlock } from "./tiff-blocks.ts";

export interface TileMosaic {
  /** The laid-out level's size. */
  width: number;
  height: number;
  /** A cell's stored size, and the cells across and down one stored tile. */
  cellWidth: number;
  cellHeight: number;
  perTile: number;
  /** Cells across and down the level. */
  across: number;
  down: number;
  /** The step from one cell to the next at this level. */
  advanceX: number;
  advanceY: number;
  /** The stored pixels of the last column and row of cells (the page may end inside a tile). */
  lastWidth: number;
  lastHeight: number;
}

/** The layout of a tiled page stored `downsample` times smaller than level 0, or null where its tiles cannot hold whole cells. */
export function tileMosaic(
  page: { width: number; height: number; blockWidth: number; blockHeight: number },
  advance: TileAdvance,
  downsample: number,
): TileMosaic | null {
  if (!Number.isInteger(downsample) || downsample < 1 || page.blockWidth % downsample !== 0 || page.blockHeight % downsample !== 0) return null;
  const cellWidth = page.blockWidth / downsample;
  const cellHeight = page.blockHeight / downsample;
  const across = Math.ceil(page.width / cellWidth);
  const down = Math.ceil(page.height / cellHeight);
  const advanceX = advance.x / downsample;
  const advanceY = advance.y / downsample;
  const lastWidth = page.width - (across - 1) * cellWidth;
  const lastHeight = page.height - (down - 1) * cellHeight;
  return {
    width: Math.floor((across - 1) * advanceX) + lastWidth,
    height: Math.floor((down - 1) * advanceY) + lastHeight,
    cellWidth,
    cellHeight,
    perTile: downsample,
    across,
    down,
    advanceX,
    advanceY,
    lastWidth,
    lastHeight,
  };
}

/** The layout of a slide's page where its tiles overlap; null where they do not, or the page is no level of it. */
export function mosaicOfPage(slide: SlideFacts | null, page: number, info: PageInfo): TileMosaic | null {
  const downsample = slide?.tileOverlap?.downsamples.get(page);
  if (!slide?.tileOverlap || downsample === undefined || !info.tiled) return null;
  return tileMosaic(info, slide.tileOverlap.advance, downsample);
}

/** The first pixel of cell `cell` along an axis stepping by `advance`. */
const cellStart = (cell: number, advance: number) => Math.floor(cell * advance);

/** The cell that shows pixel `at` along an axis of `count` cells. */
function cellAt(at: number, advance: number, count: number): number {
  const cell = Math.min(count - 1, Math.floor(at / advance));
  return cell + 1 < count && cellStart(cell + 1, advance) <= at ? cell + 1 : cell;
}

/** The stored tiles (column and row ranges, inclusive) whose cells show some pixel of the rectangle. */
export function mosaicTilesIn(mosaic: TileMosaic, rect: { x: number; y: number; width: number; height: number }) {
  const { advanceX, advanceY, across, down, perTile } = mosaic;
  return {
    columns: [cellAt(rect.x, advanceX, across), cellAt(rect.x + rect.width - 1, advanceX, across)].map((c) => Math.floor(c / perTile)) as [number, number],
    rows: [cellAt(rect.y, advanceY, down), cellAt(rect.y + rect.height - 1, advanceY, down)].map((r) => Math.floor(r / perTile)) as [number, number],
  };
}

/** Where the cells of decoded block `index` land in the level: one piece per cell, each cut to what it shows. */
export function placedCells(info: PageInfo, mosaic: TileMosaic, index: number, block: Uint8Array): Pixels[] {
  const { across: tilesAcross, perPlane } = blockGrid(info);
  const within = index % perPlane;
  const [tileColumn, tileRow] = [within % tilesAcross, Math.floor(within / tilesAcross)];
  const { rowStride } = blockPixels(info, index, block);
  const pixelBytes = samplesInBlock(info) * (info.bitsPerSample / 8);
  const pieces: Pixels[] = [];
  for (let r = tileRow * mosaic.perTile; r < Math.min(mosaic.down, (tileRow + 1) * mosaic.perTile); r++) {
    const y0 = cellStart(r, mosaic.advanceY);
    const rows = r === mosaic.down - 1 ? mosaic.lastHeight : cellStart(r + 1, mosaic.advanceY) - y0;
    const storedY = (r - tileRow * mosaic.perTile) * mosaic.cellHeight;
    for (let c = tileColumn * mosaic.perTile; c < Math.min(mosaic.across, (tileColumn + 1) * mosaic.perTile); c++) {
      const x0 = cellStart(c, mosaic.advanceX);
      const columns = c === mosaic.across - 1 ? mosaic.lastWidth : cellStart(c + 1, mosaic.advanceX) - x0;
      const storedX = (c - tileColumn * mosaic.perTile) * mosaic.cellWidth;
      pieces.push({ bytes: block.subarray(storedY * rowStride + storedX * pixelBytes), x0, y0, columns, rows, rowStride });
    }
  }
  return pieces;
}
