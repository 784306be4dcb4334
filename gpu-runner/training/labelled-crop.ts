// A rectangle of a labelled image: fine-tuning trains on some regions of a user's images and judges
// others (region-split.ts). The image is read as the network reads it first and cut after, so the
// modality is detected on the whole image, as when it is segmented.
import type { ImageRegion } from "./region-split.ts";
import type { LabelledImage } from "./labelled-images.ts";

export function cropLabelled(pair: LabelledImage, region: ImageRegion, id: string): LabelledImage {
  const { x, y, width, height } = region;
  if (x < 0 || y < 0 || width < 1 || height < 1 || x + width > pair.width || y + height > pair.height)
    throw new RangeError(`region ${width}x${height} at (${x}, ${y}) lies outside the ${pair.width}x${pair.height} image`);
  const image = new Float32Array(pair.channels * width * height);
  const labels = new Uint32Array(width * height);
  for (let row = 0; row < height; row++) {
    const from = (y + row) * pair.width + x;
    labels.set(pair.labels.subarray(from, from + width), row * width);
    for (let c = 0; c < pair.channels; c++) {
      const at = c * pair.width * pair.height + from;
      image.set(pair.image.subarray(at, at + width), c * width * height + row * width);
    }
  }
  return { ...pair, id, width, height, image, labels };
}
