// Runs the network over an image of any size: zero-pads images smaller than a tile, cuts
// overlapping tiles (tiling.ts), sends them through onnxruntime in batches, and blends the outputs
// with the taper weights. Only one batch of tiles is in flight, so the network's memory is bounded
// by the batch (at most pixelsPerCall(image) pixels), not the image.
import * as ort from "onnxruntime-node";
import type { LoadedModel } from "./model.ts";
import { ModelError } from "./faults.ts";
import { LARGE_TILE_SIDE, largeTiles, taper, tileStarts, type AxisTiles } from "./tiling.ts";

interface InferenceOptions {
  /** Tiles per onnxruntime call (default 8), fewer when they would exceed pixelsPerCall. */
  batchSize?: number;
  /** Minimum overlap between neighbouring tiles as a fraction of the training tile (Cellpose: 0.1). */
  overlap?: number;
  /** Largest tile side for networks that take any input size (default: the side of pixelsPerCall); fixed-size networks use the manifest's tileSize. */
  maxTileSide?: number;
  /**
   * Test-time augmentation (Cellpose's `augment`): every tile also runs mirrored left-right,
   * top-bottom and both, and the four outputs are mirrored back and averaged (4x the network time).
   */
  flipAverage?: boolean;
  onProgress?: (fraction: number) => void;
  /** Stops the pass before its next batch (a batch in onnxruntime runs to its end). */
  signal?: AbortSignal;
}

/** Mirror variants of a tile: bit 0 mirrors x (left-right), bit 1 mirrors y (top-bottom). */
const IDENTITY = 0,
  MIRROR_X = 1,
  MIRROR_Y = 2;
const FLIP_VARIANTS = [IDENTITY, MIRROR_X, MIRROR_Y, MIRROR_X | MIRROR_Y];

// Exported for its test only (test/engine/tiling.test.ts).
/** Pixels per onnxruntime call: one 1024x1024 tile, or eight of 224x224. */
export const MAX_PIXELS_PER_CALL = LARGE_TILE_SIDE * LARGE_TILE_SIDE;
// Exported for its test only (test/engine/tiling.test.ts).
/**
 * Images above this size run calls of a quarter of MAX_PIXELS_PER_CALL (tiles of at most 512 px a
 * side). onnxruntime's CPU arena keeps the activations of the largest call it has run (about 400 MB
 * for cpsam at 1024x1024) for the session's life, and on such images the engine's own buffers are
 * gigabytes already: an 8192x8192 image with cpsam peaks about 400 MB lower. Smaller tiles overlap
 * more (at 8192x8192, 18 tiles of 512 px a side against 9 of 960), but onnxruntime's time per pixel
 * is no higher on them (2048x2048: 4.8 s CPU on 448-px tiles, at most 512, against 5.0 s on 736-px ones).
 */
export const LARGE_IMAGE_PIXELS = 4096 * 4096;

// Exported for its test only (test/engine/tiling.test.ts).
/** The bound on one onnxruntime call's pixels for an image of this size. */
export function pixelsPerCall(width: number, height: number): number {
  return width * height > LARGE_IMAGE_PIXELS ? MAX_PIXELS_PER_CALL / 4 : MAX_PIXELS_PER_CALL;
}

/** The tiles along each axis: training-size tiles for fixed-size networks, large ones otherwise. */
export function tileLayout(
  width: number,
  height: number,
  model: LoadedModel,
  options: Pick<InferenceOptions, "overlap" | "maxTileSide"> = {},
): { rows: AxisTiles; columns: AxisTiles } {
  const tile = model.manifest.tileSize;
  const overlap = options.overlap ?? 0.1;
  if (!model.anyInputSize) {
    const fixed = (length: number) => ({ tile, starts: tileStarts(Math.max(length, tile), tile, overlap) });
    return { rows: fixed(height), columns: fixed(width) };
  }
  const maxTile = options.maxTileSide ?? Math.sqrt(pixelsPerCall(width, height));
  return { rows: largeTiles(height, tile, overlap, maxTile), columns: largeTiles(width, tile, overlap, maxTile) };
}

/** Network outputs for a normalised planar [C, H, W] image: planar [3, H, W] = (dY, dX, cellprob logit). */
export async function runNetwork(
  image: Float32Array,
  channels: number,
  width: number,
  height: number,
  model: LoadedModel,
  options: InferenceOptions = {},
): Promise<Float32Array> {
  const { rows, columns } = tileLayout(width, height, model, options);
  const tileHeight = rows.tile,
    tileWidth = columns.tile;
  const tileArea = tileHeight * tileWidth;
  const batchSize = Math.max(1, Math.min(options.batchSize ?? 8, Math.floor(pixelsPerCall(width, height) / tileArea)));
  const paddedWidth = Math.max(width, tileWidth);
  const paddedHeight = Math.max(height, tileHeight);
  const padded = paddedWidth === width && paddedHeight === height ? image : padPlanar(image, channels, width, height, paddedWidth, paddedHeight);

  const positions: [number, number][] = [];
  for (const y of rows.starts) for (const x of columns.starts) positions.push([y, x]);

  const plane = paddedWidth * paddedHeight;
  const input = new Float32Array(Math.min(batchSize, positions.length) * channels * tileArea);
  const runBatch = async (batch: [number, number][]): Promise<{ out: Float32Array; dispose: () => void }> => {
    if (!options.flipAverage) return runVariant(batch, IDENTITY);
    // Each variant's outputs are mirrored back; a mirrored axis also reverses its flow component.
    const mean = new Float32Array(batch.length * 3 * tileArea);
    for (const variant of FLIP_VARIANTS) {
      const { out, dispose } = await runVariant(batch, variant);
      const mirrorX = (variant & MIRROR_X) !== 0,
        mirrorY = (variant & MIRROR_Y) !== 0;
      for (let b = 0; b < batch.length; b++) {
        for (let c = 0; c < 3; c++) {
          const sign = (c === 0 && mirrorY) || (c === 1 && mirrorX) ? -0.25 : 0.25;
          const planeStart = (b * 3 + c) * tileArea;
          for (let y = 0; y < tileHeight; y++) {
            const dst = planeStart + y * tileWidth;
            const src = planeStart + (mirrorY ? tileHeight - 1 - y : y) * tileWidth;
            if (mirrorX) for (let x = 0; x < tileWidth; x++) mean[dst + x]! += sign * out[src + tileWidth - 1 - x]!;
            else for (let x = 0; x < tileWidth; x++) mean[dst + x]! += sign * out[src + x]!;
          }
        }
      }
      dispose();
    }
    return { out: mean, dispose: () => {} };
  };
  const runVariant = async (batch: [number, number][], variant: number): Promise<{ out: Float32Array; dispose: () => void }> => {
    const mirrorX = (variant & MIRROR_X) !== 0,
      mirrorY = (variant & MIRROR_Y) !== 0;
    for (let b = 0; b < batch.length; b++) {
      const [y0, x0] = batch[b]!;
      for (let c = 0; c < channels; c++) {
        for (let y = 0; y < tileHeight; y++) {
          const from = c * plane + (y0 + (mirrorY ? tileHeight - 1 - y : y)) * paddedWidth + x0;
          const to = ((b * channels + c) * tileHeight + y) * tileWidth;
          if (mirrorX) for (let x = 0; x < tileWidth; x++) input[to + x] = padded[from + tileWidth - 1 - x]!;
          else input.set(padded.subarray(from, from + tileWidth), to);
        }
      }
    }
    const feeds = {
      [model.inputName]: new ort.Tensor("float32", input.subarray(0, batch.length * channels * tileArea), [batch.length, channels, tileHeight, tileWidth]),
    };
    const results = await model.session.run(feeds);
    const output = results[model.outputName]!;
    const dims = output.dims;
    if (dims.length !== 4 || dims[0] !== batch.length || dims[1] !== 3 || dims[2] !== tileHeight || dims[3] !== tileWidth) {
      throw new ModelError(`model output has shape [${dims.join(", ")}], the contract needs [${batch.length}, 3, ${tileHeight}, ${tileWidth}]`);
    }
    return {
      out: output.data as Float32Array,
      dispose: () => {
        for (const tensor of Object.values(results)) tensor.dispose();
      },
    };
  };

  if (positions.length === 1) {
    // One tile: its outputs are the result as they are (no blending), cropped to the image.
    // (Disposing a CPU tensor only drops the reference; its data stays valid.)
    const { out, dispose } = await runBatch(positions);
    const result = tileWidth === width && tileHeight === height ? out : cropPlanar(out, 3, tileWidth, tileHeight, width, height);
    dispose();
    options.onProgress?.(1);
    return result;
  }

  const sum = new Float32Array(3 * plane);
  const rowEdge = taper(tileHeight),
    columnEdge = taper(tileWidth);
  // Tiles form a full grid, so the blending weight of a pixel is a product of a row and a column
  // weight; two 1-D arrays replace a full-size weight image.
  const rowWeight = axisWeights(rows.starts, paddedHeight, rowEdge);
  const columnWeight = axisWeights(columns.starts, paddedWidth, columnEdge);
  for (let first = 0; first < positions.length; first += batchSize) {
    options.signal?.throwIfAborted();
    const batch = positions.slice(first, first + batchSize);
    const { out, dispose } = await runBatch(batch);
    for (let b = 0; b < batch.length; b++) {
      const [y0, x0] = batch[b]!;
      for (let y = 0; y < tileHeight; y++) {
        const wy = rowEdge[y]!;
        const row = (y0 + y) * paddedWidth + x0;
        for (let c = 0; c < 3; c++) {
          const src = ((b * 3 + c) * tileHeight + y) * tileWidth;
          const dst = c * plane + row;
          for (let x = 0; x < tileWidth; x++) sum[dst + x]! += out[src + x]! * wy * columnEdge[x]!;
        }
      }
    }
    dispose();
    options.onProgress?.(Math.min(1, (first + batch.length) / positions.length));
  }
  for (let c = 0; c < 3; c++) {
    for (let y = 0; y < paddedHeight; y++) {
      const base = c * plane + y * paddedWidth;
      const wy = rowWeight[y]!;
      for (let x = 0; x < paddedWidth; x++) sum[base + x]! /= wy * columnWeight[x]!;
    }
  }
  return paddedWidth === width && paddedHeight === height ? sum : cropPlanar(sum, 3, paddedWidth, paddedHeight, width, height);
}

function axisWeights(starts: number[], length: number, edge: Float32Array): Float32Array {
  const weights = new Float32Array(length);
  for (const start of starts) for (let i = 0; i < edge.length; i++) weights[start + i]! += edge[i]!;
  return weights;
}

function padPlanar(data: Float32Array, channels: number, width: number, height: number, newWidth: number, newHeight: number): Float32Array {
  const out = new Float32Array(channels * newWidth * newHeight);
  for (let c = 0; c < channels; c++) {
    for (let y = 0; y < height; y++) out.set(data.subarray((c * height + y) * width, (c * height + y + 1) * width), (c * newHeight + y) * newWidth);
  }
  return out;
}

function cropPlanar(data: Float32Array, channels: number, fullWidth: number, fullHeight: number, width: number, height: number): Float32Array {
  const out = new Float32Array(channels * width * height);
  for (let c = 0; c < channels; c++) {
    for (let y = 0; y < height; y++)
      out.set(data.subarray((c * fullHeight + y) * fullWidth, (c * fullHeight + y) * fullWidth + width), (c * height + y) * width);
  }
  return out;
}
