// How a large image is cut into blocks: cores that tile the image without overlap, each read with a
// margin of context on every side (clipped at the image's edges). A cell belongs to the block whose
// core holds its centroid, so each cell is kept exactly once; with margins of at least twice the
// cell diameter, a kept cell lies whole inside its block and the network saw enough around it.

export interface Rectangle {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface Block {
  /** Position in the grid: block row and column. */
  row: number;
  column: number;
  /** The pixels this block answers for; the cores tile the image. */
  core: Rectangle;
  /** The pixels it reads: the core and its margin, inside the image. */
  read: Rectangle;
}

export interface BlockGrid {
  rows: number;
  columns: number;
  margin: number;
  /** Blocks in raster order: block row by block row, left to right. */
  blocks: Block[];
}

/**
 * A grid of cores of at most `coreSide` pixels a side, of nearly equal sizes (so no thin last
 * block), each read with `margin` pixels around it.
 */
export function blockGrid(width: number, height: number, coreSide: number, margin: number): BlockGrid {
  if (!(Number.isInteger(coreSide) && coreSide > 0)) throw new Error(`block core side must be a positive integer, got ${coreSide}`);
  if (!(Number.isInteger(margin) && margin >= 0)) throw new Error(`block margin must be a non-negative integer, got ${margin}`);
  const columns = Math.ceil(width / coreSide);
  const rows = Math.ceil(height / coreSide);
  const xs = evenCuts(width, columns);
  const ys = evenCuts(height, rows);
  const blocks: Block[] = [];
  for (let row = 0; row < rows; row++)
    for (let column = 0; column < columns; column++) {
      const core = { x: xs[column]!, y: ys[row]!, width: xs[column + 1]! - xs[column]!, height: ys[row + 1]! - ys[row]! };
      const x0 = Math.max(0, core.x - margin);
      const y0 = Math.max(0, core.y - margin);
      const x1 = Math.min(width, core.x + core.width + margin);
      const y1 = Math.min(height, core.y + core.height + margin);
      blocks.push({ row, column, core, read: { x: x0, y: y0, width: x1 - x0, height: y1 - y0 } });
    }
  return { rows, columns, margin, blocks };
}

/** n + 1 cut positions from 0 to length, the n pieces differing by at most one pixel. */
function evenCuts(length: number, pieces: number): number[] {
  return Array.from({ length: pieces + 1 }, (_, i) => Math.floor((i * length) / pieces));
}

export function contains(rectangle: Rectangle, x: number, y: number): boolean {
  return x >= rectangle.x && x < rectangle.x + rectangle.width && y >= rectangle.y && y < rectangle.y + rectangle.height;
}
