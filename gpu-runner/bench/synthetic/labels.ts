// Synthetic label images for tests and benches: discs, touching and concave shapes, tiny objects.

export interface LabelImage {
  width: number;
  height: number;
  labels: Uint32Array;
}

export function emptyLabels(width: number, height: number): LabelImage {
  return { width, height, labels: new Uint32Array(width * height) };
}

export function paintDisc(image: LabelImage, cx: number, cy: number, radius: number, label: number): void {
  for (let y = Math.max(0, Math.floor(cy - radius)); y <= Math.min(image.height - 1, Math.ceil(cy + radius)); y++) {
    for (let x = Math.max(0, Math.floor(cx - radius)); x <= Math.min(image.width - 1, Math.ceil(cx + radius)); x++) {
      if ((x - cx) ** 2 + (y - cy) ** 2 <= radius * radius) image.labels[y * image.width + x] = label;
    }
  }
}

export function paintRect(image: LabelImage, x0: number, y0: number, w: number, h: number, label: number): void {
  for (let y = y0; y < y0 + h; y++) for (let x = x0; x < x0 + w; x++) image.labels[y * image.width + x] = label;
}

/** A "C" shape: an annulus with a gap on its right, concave by construction. */
export function paintCShape(image: LabelImage, cx: number, cy: number, outer: number, inner: number, label: number): void {
  for (let y = 0; y < image.height; y++) {
    for (let x = 0; x < image.width; x++) {
      const d2 = (x - cx) ** 2 + (y - cy) ** 2;
      const inGap = x > cx && Math.abs(y - cy) < inner * 0.6;
      if (d2 <= outer * outer && d2 > inner * inner && !inGap) image.labels[y * image.width + x] = label;
    }
  }
}

/** A scene with touching discs, a concave C, rectangles sharing an edge and small objects. */
export function mixedScene(): LabelImage {
  const image = emptyLabels(160, 120);
  paintDisc(image, 30, 30, 14, 1);
  paintDisc(image, 55, 32, 13, 2); // touches disc 1
  paintDisc(image, 42, 54, 12, 3); // touches both
  paintCShape(image, 110, 40, 22, 11, 4);
  paintRect(image, 20, 85, 25, 18, 5);
  paintRect(image, 45, 85, 20, 18, 6); // shares an edge with 5
  paintDisc(image, 100, 95, 3, 7); // tiny: 29 pixels
  paintRect(image, 130, 90, 4, 5, 8); // tiny: 20 pixels
  paintDisc(image, 145, 100, 8, 9);
  return image;
}

/** Many non-overlapping discs of varied radius on a w × h canvas (deterministic). */
export function discField(width: number, height: number, count: number, minRadius: number, maxRadius: number, seed = 1): LabelImage {
  const image = emptyLabels(width, height);
  let state = seed >>> 0;
  const random = () => (state = (state * 1_664_525 + 1_013_904_223) >>> 0) / 2 ** 32;
  let placed = 0;
  for (let attempt = 0; attempt < count * 50 && placed < count; attempt++) {
    const r = minRadius + random() * (maxRadius - minRadius);
    const cx = r + random() * (width - 2 * r);
    const cy = r + random() * (height - 2 * r);
    let free = true;
    for (let y = Math.floor(cy - r) - 1; y <= Math.ceil(cy + r) + 1 && free; y++) {
      for (let x = Math.floor(cx - r) - 1; x <= Math.ceil(cx + r) + 1; x++) {
        if (x < 0 || y < 0 || x >= width || y >= height) continue;
        if (image.labels[y * width + x] !== 0 && (x - cx) ** 2 + (y - cy) ** 2 <= (r + 1) ** 2) {
          free = false;
          break;
        }
      }
    }
    if (!free) continue;
    paintDisc(image, cx, cy, r, ++placed);
  }
  return image;
}
