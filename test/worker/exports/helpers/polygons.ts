// Reference geometry for checking exports, kept deliberately naive (per-pixel tests).
// Rings are interleaved [x0, y0, x1, y1, ...] of even length, and the loops step over them by
// vertex, so every index below is in range; the `!`s say so to noUncheckedIndexedAccess.

/** Twice the signed shoelace area of an interleaved [x0, y0, x1, y1, ...] ring. */
export function doubledSignedArea(ring: ArrayLike<number>): number {
  let sum = 0;
  for (let i = 0; i < ring.length; i += 2) {
    const j = (i + 2) % ring.length;
    sum += ring[i]! * ring[j + 1]! - ring[j]! * ring[i + 1]!;
  }
  return sum;
}

/** Even-odd test of the point (px, py) against the ring (ray casting to +x). */
export function containsPoint(ring: ArrayLike<number>, px: number, py: number): boolean {
  let inside = false;
  for (let i = 0, j = ring.length - 2; i < ring.length; j = i, i += 2) {
    const xi = ring[i]!,
      yi = ring[i + 1]!,
      xj = ring[j]!,
      yj = ring[j + 1]!;
    if (yi > py !== yj > py && px < ((xj - xi) * (py - yi)) / (yj - yi) + xi) inside = !inside;
  }
  return inside;
}

/** Pixels whose centres lie inside the ring: what ImageJ counts as a traced ROI's area. */
export function pixelsInside(ring: ArrayLike<number>): number {
  let minX = Infinity,
    minY = Infinity,
    maxX = -Infinity,
    maxY = -Infinity;
  for (let i = 0; i < ring.length; i += 2) {
    const x = ring[i]!,
      y = ring[i + 1]!;
    minX = Math.min(minX, x);
    maxX = Math.max(maxX, x);
    minY = Math.min(minY, y);
    maxY = Math.max(maxY, y);
  }
  let count = 0;
  for (let y = minY; y < maxY; y++) for (let x = minX; x < maxX; x++) if (containsPoint(ring, x + 0.5, y + 0.5)) count++;
  return count;
}

/** The same closed outline, regardless of start vertex and direction. */
export function sameRing(a: ArrayLike<number>, b: ArrayLike<number>): boolean {
  if (a.length !== b.length) return false;
  const n = a.length / 2;
  for (let start = 0; start < n; start++) {
    for (const step of [1, -1]) {
      let all = true;
      for (let k = 0; k < n && all; k++) {
        const i = (((start + step * k) % n) + n) % n;
        all = a[2 * k] === b[2 * i] && a[2 * k + 1] === b[2 * i + 1];
      }
      if (all) return true;
    }
  }
  return false;
}
