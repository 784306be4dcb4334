// Tile layout and blending, after Cellpose's transforms.make_tiles and _taper_mask: tiles of the
// network's size overlap by at least `overlap` of a tile on each side, spread evenly
// (np.linspace(0, L - tile, n) truncated to integers); outputs are averaged with a weight that
// falls off smoothly (a logistic, σ = 7.5 px) within 20 px of each tile edge.

/** Start positions along one axis of length `length` for tiles of side `tile`. */
export function tileStarts(length: number, tile: number, overlap: number): number[] {
  if (length <= tile) return [0];
  const count = Math.max(2, Math.ceil(((1 + 2 * overlap) * length) / tile));
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
