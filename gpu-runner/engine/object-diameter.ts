// Cellpose's size measure (after its utils.diameters, Stringer et al. 2021): the diameter of the
// disc whose area is the median object area.
export function medianObjectDiameter(labels: Uint32Array): number {
  const areas = new Map<number, number>();
  for (const label of labels) if (label !== 0) areas.set(label, (areas.get(label) ?? 0) + 1);
  if (areas.size === 0) return 0;
  const sorted = Float64Array.from(areas.values()).sort();
  const middle = sorted.length >> 1;
  // Not empty (checked above): middle is in range, and so is middle - 1 when the length is even.
  const medianArea = sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
  return 2 * Math.sqrt(medianArea / Math.PI);
}
