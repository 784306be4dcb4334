// Random training crops, after Cellpose's transforms.random_rotate_and_resize (Stringer et al.
// 2021): each crop is one affine warp of the source (rescale to the model's diameter times a
// random zoom, rotation, flip, random centre), bilinear for the image and flow targets, nearest
// for the foreground mask; flow vectors are rotated and mirrored with the pixels they describe.
// Intensities then get a random gain and offset, and, where the settings ask for them, the changes
// real microscopes and cameras add: a gamma curve (detector and display non-linearity) and
// Gaussian noise (shot and read noise; StarDist's and Cellpose 3's training add noise likewise),
// and on colour images a small gain per channel. All channels of a crop share its warp.
import type { SeededRandom } from "./random.ts";

/** One source image prepared for sampling: normalised intensities and flow targets. */
export interface PreparedImage {
  id: string;
  width: number;
  height: number;
  /** 1, or 3 for a colour model (training/network-input.ts). */
  channels: number;
  /** Planar [channels, H, W] normalised intensities. */
  image: Float32Array;
  /** Planar [2, H, W] unit flows (dY, dX). */
  flows: Float32Array;
  foreground: Uint8Array;
  /** Scale that brings this image's objects to the model's diameter. */
  scaleToModel: number;
}

export interface AugmentSettings {
  /** Zoom drawn uniformly from [1 - zoomRange/2, 1 + zoomRange/2] on top of scaleToModel. */
  zoomRange: number;
  gainRange: [number, number];
  offsetRange: [number, number];
  /** Exponent drawn uniformly from this range for x -> sign(x)·|x|^gamma on the normalised image (absent: none). */
  gammaRange?: [number, number];
  /** Standard deviation of added Gaussian noise, drawn uniformly from this range per crop (absent: none). */
  noiseRange?: [number, number];
  /**
   * Colour (3-channel) crops only: each channel's gain is further multiplied by a factor drawn
   * uniformly from this range (absent: none). Stain strength and hue vary between labs and batches,
   * and per-channel normalisation evens out the range of each channel but not every shift of
   * balance between them. A one-channel crop has nothing to balance: its gain covers it.
   */
  channelGainRange?: [number, number];
}

export const CELLPOSE_AUGMENTATION: AugmentSettings = { zoomRange: 0.5, gainRange: [0.7, 1.3], offsetRange: [-0.1, 0.1] };

/** Cellpose's transforms plus gamma and noise (and ±10 % gain per channel on colour): for training on images from many microscopes. */
export const MICROSCOPE_AUGMENTATION: AugmentSettings = {
  ...CELLPOSE_AUGMENTATION,
  gammaRange: [0.7, 1.4],
  noiseRange: [0, 0.06],
  channelGainRange: [0.9, 1.1],
};

function bilinear(plane: Float32Array, offset: number, width: number, height: number, sx: number, sy: number): number {
  const x0 = Math.floor(sx),
    y0 = Math.floor(sy);
  const fx = sx - x0,
    fy = sy - y0;
  let sum = 0;
  for (let j = 0; j < 2; j++) {
    const y = y0 + j;
    if (y < 0 || y >= height) continue;
    const wy = j ? fy : 1 - fy;
    for (let i = 0; i < 2; i++) {
      const x = x0 + i;
      if (x < 0 || x >= width) continue;
      sum += wy * (i ? fx : 1 - fx) * plane[offset + y * width + x]!; // x and y are inside the plane (checked above)
    }
  }
  return sum;
}

/**
 * Writes one crop of `size` x `size` into images[batchIndex] ([N, C, S, S], C = source.channels)
 * and targets[batchIndex] ([N, 3, S, S] = unit dY, unit dX, foreground).
 */
export function sampleCrop(
  source: PreparedImage,
  size: number,
  random: SeededRandom,
  settings: AugmentSettings,
  images: Float32Array,
  targets: Float32Array,
  batchIndex: number,
): void {
  const { width, height } = source;
  const scale = source.scaleToModel * (1 - settings.zoomRange / 2 + settings.zoomRange * random.next());
  const angle = 2 * Math.PI * random.next();
  const mirror = random.next() < 0.5 ? -1 : 1; // mirrors x before rotating
  // The crop centre lands anywhere the crop still overlaps the image by at least half.
  const reach = size / 2 / scale;
  const centreX = width <= reach * 2 ? width / 2 : reach / 2 + random.next() * (width - reach);
  const centreY = height <= reach * 2 ? height / 2 : reach / 2 + random.next() * (height - reach);
  const gain = random.uniform(settings.gainRange[0], settings.gainRange[1]);
  const offset = random.uniform(settings.offsetRange[0], settings.offsetRange[1]);
  const gamma = settings.gammaRange ? random.uniform(settings.gammaRange[0], settings.gammaRange[1]) : 1;
  const noise = settings.noiseRange ? random.uniform(settings.noiseRange[0], settings.noiseRange[1]) : 0;
  // Drawn last, and only for colour, so that one-channel runs draw the same numbers as before it existed.
  const { channels } = source;
  const channelRange = channels === 3 ? settings.channelGainRange : undefined;
  const gains = Array.from({ length: channels }, () => (channelRange ? gain * random.uniform(channelRange[0], channelRange[1]) : gain));

  const cos = Math.cos(angle),
    sin = Math.sin(angle);
  const plane = size * size;
  const imageBase = batchIndex * channels * plane;
  const targetBase = batchIndex * 3 * plane;
  const sourcePlane = width * height;
  for (let v = 0; v < size; v++) {
    for (let u = 0; u < size; u++) {
      // Output pixel -> source position: undo rotation, then mirror, then zoom.
      const ox = (u + 0.5 - size / 2) / scale,
        oy = (v + 0.5 - size / 2) / scale;
      const rx = (cos * ox + sin * oy) * mirror;
      const ry = -sin * ox + cos * oy;
      const sx = centreX + rx - 0.5,
        sy = centreY + ry - 0.5;
      const out = v * size + u;
      for (let c = 0; c < channels; c++) {
        let value = bilinear(source.image, c * sourcePlane, width, height, sx, sy);
        if (gamma !== 1) value = value < 0 ? -((-value) ** gamma) : value ** gamma;
        images[imageBase + c * plane + out] = gains[c]! * value + offset + (noise > 0 ? noise * random.normal() : 0);
      }
      const nx = Math.round(sx),
        ny = Math.round(sy);
      const inside = nx >= 0 && nx < width && ny >= 0 && ny < height && source.foreground[ny * width + nx] !== 0;
      let flowY = 0,
        flowX = 0;
      if (inside) {
        // Source flow vector -> output frame: mirror x, then rotate forward.
        const fy = bilinear(source.flows, 0, width, height, sx, sy);
        const fx = bilinear(source.flows, sourcePlane, width, height, sx, sy) * mirror;
        flowX = cos * fx - sin * fy;
        flowY = sin * fx + cos * fy;
      }
      targets[targetBase + out] = flowY;
      targets[targetBase + plane + out] = flowX;
      targets[targetBase + 2 * plane + out] = inside ? 1 : 0;
    }
  }
}
