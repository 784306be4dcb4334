// The preview of an image too large to hold, made from its parts as they are read: every part's
// pixels are summed into the boxes of the preview's finest level (previewFactors: at most 4096²,
// so this holds 4 bytes a pixel of that level per channel shown, at most three), and the pyramid is
// made from that level once every part was added (preview.ts). Each pixel must be added once.
import type { DecodedImage } from "../../common/decode/index.ts";
import { previewFactors, previewTiles } from "./preview.ts";

export interface PreviewPart {
  /** The part's position in the image. */
  x: number;
  y: number;
  /** The rectangle of it to add, in the part's own coordinates. */
  from: { x: number; y: number; width: number; height: number };
}

export class PreviewReduction {
  readonly width: number;
  readonly height: number;
  readonly factor: number;
  private readonly channels: number;
  private readonly reducedWidth: number;
  private readonly reducedHeight: number;
  private readonly sums: Float32Array;

  constructor(width: number, height: number, channels: number) {
    this.width = width;
    this.height = height;
    this.factor = previewFactors(width, height)[0]!;
    this.channels = Math.min(3, channels);
    this.reducedWidth = Math.ceil(width / this.factor);
    this.reducedHeight = Math.ceil(height / this.factor);
    this.sums = new Float32Array(this.channels * this.reducedWidth * this.reducedHeight);
  }

  /** Adds a rectangle of a part read from the image (its shown channels). */
  add(part: DecodedImage, { x, y, from }: PreviewPart): void {
    const { factor, reducedWidth, reducedHeight } = this;
    const plane = part.width * part.height;
    for (let c = 0; c < this.channels; c++) {
      const sums = this.sums.subarray(c * reducedWidth * reducedHeight, (c + 1) * reducedWidth * reducedHeight);
      for (let row = from.y; row < from.y + from.height; row++) {
        const at = c * plane + row * part.width;
        const box = Math.floor((y + row) / factor) * reducedWidth;
        for (let column = from.x; column < from.x + from.width; column++) sums[box + Math.floor((x + column) / factor)]! += part.data[at + column]!;
      }
    }
  }

  /** The preview archive, once every pixel was added. */
  tiles(): Uint8Array {
    const { factor, reducedWidth: w, reducedHeight: h, width, height } = this;
    const data = new Float32Array(this.sums.length);
    for (let c = 0; c < this.channels; c++)
      for (let oy = 0; oy < h; oy++) {
        const rows = Math.min(height, (oy + 1) * factor) - oy * factor;
        for (let ox = 0; ox < w; ox++) {
          const columns = Math.min(width, (ox + 1) * factor) - ox * factor;
          const i = (c * h + oy) * w + ox;
          data[i] = this.sums[i]! / (rows * columns);
        }
      }
    const reduced: DecodedImage = { width: w, height: h, channels: this.channels, bitDepth: 32, sampleFormat: "float", data };
    return previewTiles(reduced, { factor, width, height });
  }
}
