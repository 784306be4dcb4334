// A synthetic fluorescence mosaic of any size, rendered a rectangle at a time and never held whole:
// one nucleus (an ellipse with a soft, bright centre) in most cells of a square grid, placed and
// shaped from a hash of the cell, on an uneven background with noise; 16-bit values. The truth is
// known at every pixel, so a segmentation can be scored one cell at a time. For bench:big.
import type { DecodedImage } from "../../../common/decode/index.ts";
import type { RegionSource } from "../../engine/blocks/region-source.ts";

/** Grid pitch (px): a nucleus at most 24 px across per 40 px cell, 0.75 of cells occupied (~470 nuclei per MP). */
const PITCH = 40;
const OCCUPIED = 0.75;

export interface Nucleus {
  id: number;
  cx: number;
  cy: number;
  /** Semi-axes and orientation. */
  a: number;
  b: number;
  cos: number;
  sin: number;
  brightness: number;
}

/** A 32-bit hash of a cell and a salt (Wang-style integer mixing), uniform in [0, 1). */
function hash(gx: number, gy: number, salt: number): number {
  let h = Math.imul(gx, 0x27d4eb2d) ^ Math.imul(gy, 0x165667b1) ^ Math.imul(salt + 1, 0x9e3779b9);
  h = Math.imul(h ^ (h >>> 15), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return ((h ^ (h >>> 16)) >>> 0) / 4294967296;
}

export class SyntheticMosaic {
  readonly width: number;
  readonly height: number;
  readonly columns: number;
  readonly rows: number;

  constructor(width: number, height: number) {
    this.width = width;
    this.height = height;
    this.columns = Math.floor(width / PITCH);
    this.rows = Math.floor(height / PITCH);
  }

  /** The nucleus of grid cell (gx, gy), or undefined for an empty cell. */
  nucleus(gx: number, gy: number): Nucleus | undefined {
    if (gx < 0 || gy < 0 || gx >= this.columns || gy >= this.rows || hash(gx, gy, 0) >= OCCUPIED) return undefined;
    const a = 7 + 5 * hash(gx, gy, 1);
    const b = a * (0.65 + 0.35 * hash(gx, gy, 2));
    const angle = Math.PI * hash(gx, gy, 3);
    const room = PITCH / 2 - a - 1;
    return {
      id: gy * this.columns + gx + 1,
      cx: gx * PITCH + PITCH / 2 + room * (2 * hash(gx, gy, 4) - 1),
      cy: gy * PITCH + PITCH / 2 + room * (2 * hash(gx, gy, 5) - 1),
      a,
      b,
      cos: Math.cos(angle),
      sin: Math.sin(angle),
      brightness: 900 + 900 * hash(gx, gy, 6),
    };
  }

  /** Squared elliptical radius of pixel (x, y)'s centre: below 1 inside the nucleus. */
  static radius2(n: Nucleus, x: number, y: number): number {
    const dx = x + 0.5 - n.cx,
      dy = y + 0.5 - n.cy;
    const u = dx * n.cos + dy * n.sin,
      v = -dx * n.sin + dy * n.cos;
    return (u / n.a) ** 2 + (v / n.b) ** 2;
  }

  /** The truth at a pixel: the nucleus id, 0 for background. */
  labelAt(x: number, y: number): number {
    const n = this.nucleus(Math.floor(x / PITCH), Math.floor(y / PITCH));
    return n && SyntheticMosaic.radius2(n, x, y) < 1 ? n.id : 0;
  }

  /** Nuclei in the whole mosaic. */
  count(): number {
    let n = 0;
    for (let gy = 0; gy < this.rows; gy++) for (let gx = 0; gx < this.columns; gx++) if (this.nucleus(gx, gy)) n++;
    return n;
  }

  render(x0: number, y0: number, w: number, h: number): DecodedImage {
    const data = new Float32Array(w * h);
    for (let y = y0; y < y0 + h; y++) {
      const gy = Math.floor(y / PITCH);
      for (let x = x0; x < x0 + w; x++) {
        const n = this.nucleus(Math.floor(x / PITCH), gy);
        let value = 200 + 40 * Math.sin(x / 211) * Math.cos(y / 173) + 30 * (hash(x, y, 7) - 0.5);
        if (n) {
          const r2 = SyntheticMosaic.radius2(n, x, y);
          if (r2 < 1) value += n.brightness * (0.6 + 0.4 * Math.sqrt(1 - r2));
        }
        data[(y - y0) * w + (x - x0)] = Math.round(value);
      }
    }
    return { width: w, height: h, channels: 1, bitDepth: 16, sampleFormat: "uint", data };
  }

  regions(): RegionSource {
    return { width: this.width, height: this.height, channels: 1, readRegion: async (x, y, w, h) => this.render(x, y, w, h) };
  }
}
