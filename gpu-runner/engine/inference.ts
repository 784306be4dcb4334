// Runs the network over an image of any size: zero-pads images smaller than a tile, cuts
// overlapping tiles (tiling.ts), sends them through onnxruntime in batches, and blends the outputs
// with the taper weights. Only one batch of tiles is in flight, so the network's memory is bounded
// by the batch, not the image.
import * as ort from "onnxruntime-node";
import type { LoadedModel } from "./model.ts";
import { taper, tileStarts } from "./tiling.ts";
import { ModelError } from "./faults.ts";

export interface InferenceOptions {
  /** Tiles per onnxruntime call (default 8). */
  batchSize?: number;
  /** Minimum overlap between neighbouring tiles as a fraction of the tile (Cellpose: 0.1). */
  overlap?: number;
  onProgress?: (fraction: number) => void;
}

/** Network outputs for a normalised planar [C, H, W] image: planar [3, H, W] = (dY, dX, cellprob logit). */
export async function runNetwork(image: Float32Array, channels: number, width: number, height: number, model: LoadedModel, options: InferenceOptions = {}): Promise<Float32Array> {
  const tile = model.manifest.tileSize;
  const batchSize = Math.max(1, options.batchSize ?? 8);
  const overlap = options.overlap ?? 0.1;
  const paddedWidth = Math.max(width, tile);
  const paddedHeight = Math.max(height, tile);
  const padded = paddedWidth === width && paddedHeight === height ? image : padPlanar(image, channels, width, height, paddedWidth, paddedHeight);

  const ys = tileStarts(paddedHeight, tile, overlap);
  const xs = tileStarts(paddedWidth, tile, overlap);
  const positions: [number, number][] = [];
  for (const y of ys) for (const x of xs) positions.push([y, x]);

  const plane = paddedWidth * paddedHeight;
  const sum = new Float32Array(3 * plane);
  const edge = taper(tile);
  // Tiles form a full grid, so the blending weight of a pixel is a product of a row and a column
  // weight; two 1-D arrays replace a full-size weight image.
  const rowWeight = axisWeights(ys, tile, paddedHeight, edge);
  const columnWeight = axisWeights(xs, tile, paddedWidth, edge);
  const tileArea = tile * tile;
  const input = new Float32Array(batchSize * channels * tileArea);

  for (let first = 0; first < positions.length; first += batchSize) {
    const batch = positions.slice(first, first + batchSize);
    for (let b = 0; b < batch.length; b++) {
      const [y0, x0] = batch[b]!;
      for (let c = 0; c < channels; c++) {
        for (let y = 0; y < tile; y++) {
          const from = c * plane + (y0 + y) * paddedWidth + x0;
          input.set(padded.subarray(from, from + tile), ((b * channels + c) * tile + y) * tile);
        }
      }
    }
    const feeds = { [model.inputName]: new ort.Tensor("float32", input.subarray(0, batch.length * channels * tileArea), [batch.length, channels, tile, tile]) };
    const results = await model.session.run(feeds);
    const output = results[model.outputName]!;
    const dims = output.dims;
    if (dims.length !== 4 || dims[0] !== batch.length || dims[1] !== 3 || dims[2] !== tile || dims[3] !== tile) {
      throw new ModelError(`model output has shape [${dims.join(", ")}], the contract needs [${batch.length}, 3, ${tile}, ${tile}]`);
    }
    const out = output.data as Float32Array;
    for (let b = 0; b < batch.length; b++) {
      const [y0, x0] = batch[b]!;
      for (let y = 0; y < tile; y++) {
        const wy = edge[y]!;
        const row = (y0 + y) * paddedWidth + x0;
        for (let c = 0; c < 3; c++) {
          const src = ((b * 3 + c) * tile + y) * tile;
          const dst = c * plane + row;
          for (let x = 0; x < tile; x++) sum[dst + x]! += out[src + x]! * wy * edge[x]!;
        }
      }
    }
    for (const tensor of Object.values(results)) tensor.dispose();
    options.onProgress?.(Math.min(1, (first + batch.length) / positions.length));
  }
  for (let c = 0; c < 3; c++) {
    for (let y = 0; y < paddedHeight; y++) {
      const base = c * plane + y * paddedWidth;
      const wy = rowWeight[y]!;
      for (let x = 0; x < paddedWidth; x++) sum[base + x]! /= wy * columnWeight[x]!;
    }
  }
  return paddedWidth === width && paddedHeight === height ? sum : cropPlanar(sum, 3, paddedWidth, width, height);
}

function axisWeights(starts: number[], tile: number, length: number, edge: Float32Array): Float32Array {
  const weights = new Float32Array(length);
  for (const start of starts) for (let i = 0; i < tile; i++) weights[start + i]! += edge[i]!;
  return weights;
}

function padPlanar(data: Float32Array, channels: number, width: number, height: number, newWidth: number, newHeight: number): Float32Array {
  const out = new Float32Array(channels * newWidth * newHeight);
  for (let c = 0; c < channels; c++) {
    for (let y = 0; y < height; y++) out.set(data.subarray((c * height + y) * width, (c * height + y + 1) * width), (c * newHeight + y) * newWidth);
  }
  return out;
}

function cropPlanar(data: Float32Array, channels: number, fullWidth: number, width: number, height: number): Float32Array {
  const fullHeight = data.length / channels / fullWidth;
  const out = new Float32Array(channels * width * height);
  for (let c = 0; c < channels; c++) {
    for (let y = 0; y < height; y++) out.set(data.subarray((c * fullHeight + y) * fullWidth, (c * fullHeight + y) * fullWidth + width), (c * height + y) * width);
  }
  return out;
}
