// Tile layout and blending, after Cellpose's transforms.make_tiles and _taper_mask: tiles of the
// network's size overlap by at least `overlap` of a tile on each side, spread evenly
// (np.linspace(0, L - tile, n) truncated to integers); outputs are averaged with a weight that
// falls off smoothly (a logistic, σ = 7.5 px) within 20 px of each tile edge.
//
// A network without global operations (fully convolutional, symbolic H and W) gives the same
// outputs on a large tile as on the training-size tiles it covers, away from tile edges; only the
// zero padding at a tile's edge differs. For such networks the engine runs tiles as large as
// LARGE_TILE_SIDE (a whole 1024x1024 image in one call), keeping the overlap in pixels that the
// training-size tiles would have, so there are fewer seams and far fewer pixels run twice.

/** Largest tile side for networks that take any input size: bounds one call's memory (about 1 Mpx). */
export const LARGE_TILE_SIDE = 1024;

/** Tile side and start positions along one axis. */
export interface AxisTiles {
  tile: number;
  starts: number[];
}

/** Start positions along one axis of length `length` for tiles of side `tile`. */
export function tileStarts(length: number, tile: number, overlap: number): number[] {
  if (length <= tile) return [0];
  return spread(length, tile, Math.max(2, Math.ceil(((1 + 2 * overlap) * length) / tile)));
}

/**
 * Tiles along one axis for a network that takes any input size. `trainingTile` is the manifest's
 * tileSize: tile sides are multiples of its power-of-two factor (up to 32), the factor its
 * downsampling levels need, and neighbours overlap by at least the `2 · overlap · trainingTile` px
 * that Cellpose's layout guarantees at the training size. A side that fits in `maxTile` is one
 * tile (rounded up to the multiple; the caller zero-pads the rest).
 */
export function largeTiles(length: number, trainingTile: number, overlap: number, maxTile = LARGE_TILE_SIDE): AxisTiles {
  const multiple = sizeMultiple(trainingTile);
  const roundUp = (n: number) => Math.ceil(n / multiple) * multiple;
  const largest = Math.max(multiple, Math.floor(maxTile / multiple) * multiple);
  if (length <= largest) return { tile: roundUp(length), starts: [0] };
  const minOverlap = Math.min(Math.ceil(2 * overlap * trainingTile), largest - multiple);
  // n tiles of side >= (L + (n - 1)·O) / n, spread evenly, overlap by >= O.
  const count = Math.ceil((length - minOverlap) / (largest - minOverlap));
  const tile = Math.min(largest, roundUp((length + (count - 1) * minOverlap) / count));
  return { tile, starts: spread(length, tile, count) };
}

// Exported for its test only (test/engine/tiling.test.ts).
/** The power-of-two factor of `tileSize`, capped at 32: input sides that are multiples of it pool like `tileSize` does. */
export function sizeMultiple(tileSize: number): number {
  let multiple = 1;
  while (multiple < 32 && tileSize % (2 * multiple) === 0) multiple *= 2;
  return multiple;
}

/** np.linspace(0, length - tile, count) truncated to integers. */
function spread(length: number, tile: number, count: number): number[] {
  if (count === 1) return [0];
  const starts: number[] = [];
  for (let i = 0; i < count; i++) starts.push(Math.trunc(((length - tile) * i) / (count - 1)));
  return starts;
}

/** Separable taper weights of a tile (length `tile`), Cellpose's _taper_mask along one axis. */
export function taper(tile: number): Float32Array {
  const size = Math.max(224, tile);
  const mean = (size - 1) / 2;
  const full = new Float32Array(size);
  for (let i = 0; i < size; i++) full[i] = 1 / (1 + Math.exp((Math.abs(i - mean) - (size / 2 - 20)) / 7.5));
  const offset = Math.floor(size / 2) - Math.floor(tile / 2);
  return full.slice(offset, offset + tile);
}
