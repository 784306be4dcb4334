// Keeps each mask's largest 8-connected piece. Cellpose's masks may occasionally consist of
// separate pieces (pixels whose trajectories end in the same seed without touching); an ROI is one
// outline, so stray pieces are dropped to keep "polygon area = pixel count" true for every mask.
// (A deliberate addition to Cellpose's pipeline; it changes nothing on connected masks.)

/** Works in place on labels 1..count; returns the number of pixels removed. */
export function keepLargestComponents(labels: Uint32Array, count: number, width: number): number {
  const height = labels.length / width;
  const component = new Int32Array(labels.length).fill(-1);
  const sizes: number[] = [];
  const owners: number[] = [];
  const stack = new Int32Array(labels.length);
  for (let start = 0; start < labels.length; start++) {
    const k = labels[start]!;
    if (k === 0 || component[start] !== -1) continue;
    const id = sizes.length;
    let size = 0, top = 0;
    stack[top++] = start;
    component[start] = id;
    while (top > 0) {
      const i = stack[--top]!;
      size++;
      const y = Math.floor(i / width), x = i - y * width;
      for (let dy = -1; dy <= 1; dy++) {
        const yy = y + dy;
        if (yy < 0 || yy >= height) continue;
        for (let dx = -1; dx <= 1; dx++) {
          const xx = x + dx;
          if (xx < 0 || xx >= width) continue;
          const j = yy * width + xx;
          if (labels[j] === k && component[j] === -1) { component[j] = id; stack[top++] = j; }
        }
      }
    }
    sizes.push(size);
    owners.push(k);
  }
  if (sizes.length === count) return 0; // one piece per mask: nothing to do
  const best = new Int32Array(count + 1).fill(-1);
  for (let id = 0; id < sizes.length; id++) {
    const k = owners[id]!;
    if (best[k] === -1 || sizes[id]! > sizes[best[k]!]!) best[k] = id;
  }
  let removed = 0;
  for (let i = 0; i < labels.length; i++) {
    const k = labels[i]!;
    if (k !== 0 && component[i] !== best[k]) { labels[i] = 0; removed++; }
  }
  return removed;
}
