// The preview of an image too large to hold, made from its parts as they are read: every part's
// pixels are summed into the boxes of the preview's finest level (previewFactors: at most 4096²,
// so this holds 4 bytes a pixel of that level per channel shown, at most three), and the pyramid is
// made from that level once every part was added (preview.ts). Each pixel must be added once. The
// parts may come from a reduced level of the file's own pyramid (`source`) no smaller than that
// finest level: each of its pixels goes to the box its centre falls in, and each box is the mean of
// the pixels it received.
//
// Numeric hot loops: every index is bounded by a loop over the array's own length (or width ×
// height, or a row's samples). The `!`s state that bound to noUncheckedIndexedAccess rather
// than check it again in the inner loop.
import type { DecodedImage } from "../../common/decode/index.ts";
import type { DisplayRange } from "../../common/stretch.ts";
import { previewFactors, previewTiles } from "./preview.ts";

interface PreviewPart {
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
  /** The finest level's size in boxes. */
  readonly reducedWidth: number;
  readonly reducedHeight: number;
  private readonly channels: number;
  private readonly sums: Float32Array;
  /**
   * Reading a reduced level: the box of each of its columns, the first box of its rows' line, and
   * how many of its pixels each box received. Null when the parts are the full resolution, whose
   * boxes each receive all their rows × columns.
   */
  private readonly level: { columnBox: Int32Array; rowBox: Int32Array; counts: Float32Array } | null;

  constructor(width: number, height: number, channels: number, source?: { width: number; height: number }) {
    this.width = width;
    this.height = height;
    this.factor = previewFactors(width, height)[0]!;
    this.channels = Math.min(3, channels);
    this.reducedWidth = Math.ceil(width / this.factor);
    this.reducedHeight = Math.ceil(height / this.factor);
    this.sums = new Float32Array(this.channels * this.reducedWidth * this.reducedHeight);
    const reduced = source && (source.width !== width || source.height !== height);
    this.level = reduced
      ? {
          columnBox: boxesOf(source.width, width, this.factor, this.reducedWidth, 1),
          rowBox: boxesOf(source.height, height, this.factor, this.reducedHeight, this.reducedWidth),
          counts: new Float32Array(this.reducedWidth * this.reducedHeight),
        }
      : null;
  }

  /** Adds a rectangle of a part read from the image, or from the reduced level given (its shown channels). */
  add(part: DecodedImage, placement: PreviewPart): void {
    if (this.level) {
      this.addFromLevel(part, placement, this.level);
      return;
    }
    const { x, y, from } = placement;
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

  private addFromLevel(part: DecodedImage, { x, y, from }: PreviewPart, level: NonNullable<PreviewReduction["level"]>): void {
    const boxes = this.reducedWidth * this.reducedHeight;
    const plane = part.width * part.height;
    for (let c = 0; c < this.channels; c++) {
      const sums = this.sums.subarray(c * boxes, (c + 1) * boxes);
      for (let row = from.y; row < from.y + from.height; row++) {
        const at = c * plane + row * part.width;
        const line = level.rowBox[y + row]!;
        for (let column = from.x; column < from.x + from.width; column++) {
          const box = line + level.columnBox[x + column]!;
          sums[box]! += part.data[at + column]!;
          if (c === 0) level.counts[box]!++;
        }
      }
    }
  }

  /** Adds a part's share made by previewShare for an image of this size. */
  addShare(share: Uint8Array): void {
    const aligned = share.byteOffset % 4 === 0 ? share : share.slice();
    const [left, top, across, down, channels] = new Int32Array(aligned.buffer, aligned.byteOffset, 5);
    const { reducedWidth, reducedHeight } = this;
    if (channels !== this.channels || left! < 0 || top! < 0 || left! + across! > reducedWidth || top! + down! > reducedHeight) {
      throw new Error(`a preview share of ${across}x${down} boxes at (${left}, ${top}), ${channels} channel(s), does not fit this preview`);
    }
    if (aligned.length !== 20 + 4 * channels * across! * down!) throw new Error("a preview share's length does not match its header");
    const sums = new Float32Array(aligned.buffer, aligned.byteOffset + 20, channels * across! * down!);
    for (let c = 0; c < channels; c++)
      for (let row = 0; row < down!; row++) {
        const into = (c * reducedHeight + top! + row) * reducedWidth + left!;
        const from = (c * down! + row) * across!;
        for (let column = 0; column < across!; column++) this.sums[into + column]! += sums[from + column]!;
      }
  }

  /** The preview archive, once every pixel was added, stretched by `display` when given (else by its finest level's own). */
  tiles(display?: DisplayRange[]): Uint8Array {
    const { factor, reducedWidth: w, reducedHeight: h, width, height } = this;
    const data = new Float32Array(this.sums.length);
    for (let c = 0; c < this.channels; c++)
      for (let oy = 0; oy < h; oy++) {
        const rows = Math.min(height, (oy + 1) * factor) - oy * factor;
        for (let ox = 0; ox < w; ox++) {
          const columns = Math.min(width, (ox + 1) * factor) - ox * factor;
          const i = (c * h + oy) * w + ox;
          const received = this.level ? this.level.counts[oy * w + ox]! : rows * columns;
          data[i] = received > 0 ? this.sums[i]! / received : 0;
        }
      }
    const reduced: DecodedImage = { width: w, height: h, channels: this.channels, bitDepth: 32, sampleFormat: "float", data };
    return previewTiles(reduced, { factor, width, height }, display);
  }
}

/** For each of a level's `levelSide` columns (or rows), the full resolution's box its centre falls in, times `stride`. */
function boxesOf(levelSide: number, side: number, factor: number, boxes: number, stride: number): Int32Array {
  const boxOf = new Int32Array(levelSide);
  for (let i = 0; i < levelSide; i++) boxOf[i] = Math.min(boxes - 1, Math.floor(((i + 0.5) * side) / levelSide / factor)) * stride;
  return boxOf;
}

/**
 * A part's share of the finest level, for a preview summed elsewhere (a fanned-out prediction's
 * blocks each give theirs, and its merge adds them with addShare): the sums of the boxes its
 * rectangle touches, after a header of five 32-bit integers (first box column and row, boxes
 * across and down, channels). Boxes on a seam get a partial sum from each side.
 */
export function previewShare(imageWidth: number, imageHeight: number, part: DecodedImage, { x, y, from }: PreviewPart): Uint8Array {
  const factor = previewFactors(imageWidth, imageHeight)[0]!;
  const channels = Math.min(3, part.channels);
  const left = Math.floor((x + from.x) / factor);
  const top = Math.floor((y + from.y) / factor);
  const across = Math.floor((x + from.x + from.width - 1) / factor) - left + 1;
  const down = Math.floor((y + from.y + from.height - 1) / factor) - top + 1;
  const bytes = new Uint8Array(SHARE_HEADER_BYTES + 4 * channels * across * down);
  new Int32Array(bytes.buffer, 0, 5).set([left, top, across, down, channels]);
  const sums = new Float32Array(bytes.buffer, SHARE_HEADER_BYTES);
  const plane = part.width * part.height;
  for (let c = 0; c < channels; c++)
    for (let row = from.y; row < from.y + from.height; row++) {
      const at = c * plane + row * part.width;
      const box = (c * down + Math.floor((y + row) / factor) - top) * across - left;
      for (let column = from.x; column < from.x + from.width; column++) sums[box + Math.floor((x + column) / factor)]! += part.data[at + column]!;
    }
  return bytes;
}

const SHARE_HEADER_BYTES = 5 * 4;
