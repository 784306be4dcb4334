// `segment --overlay`: <name>-overlay.png beside an image's exports, the image as the dashboard
// shows it (common/stretch.ts) with every cell's outline drawn over it in the dashboard viewer's
// outline yellow, so a folder's results can be checked without the dashboard. The outlines come
// from the downloaded rois.geojson, the image from the local file the client uploaded.
import { readFile, rename, rm, writeFile } from "node:fs/promises";
import { basename, extname, join } from "node:path";
import { encode as encodePng } from "fast-png";
import { fileSource, openImageRegions } from "../common/decode/region-reader.ts";
import { stretchOf, toBytes, toRgb } from "../common/stretch.ts";

/**
 * Larger images get no overlay: decoding one channel takes 4 bytes a pixel and the picture 3 more,
 * about 450 MB at this bound, which a laptop running the client can spare.
 */
export const OVERLAY_MAX_PIXELS = 64 * 1024 * 1024;

// Exported for its test only (test/client/segment-cli.test.ts).
/** The dashboard viewer's outline colour (#facc15): no gray pixel has it. */
export const OUTLINE_RGB = [0xfa, 0xcc, 0x15] as const;

export const overlayFile = (imageName: string) => `${basename(imageName, extname(imageName))}-overlay.png`;

/** Why there is no overlay, when the image is too large for one; not an error. */
export class OverlaySkipped extends Error {}

interface Geometry {
  type: string;
  coordinates: unknown;
}

// Exported for its test only (test/client/overlay.test.ts).
/**
 * The rings of each polygon (exterior first, then holes) of a GeoJSON FeatureCollection: every
 * feature's geometry and, for QuPath cell objects (`--cell-objects`), its nucleus's too, so both
 * the cell and the nucleus inside it are drawn.
 */
export function polygonsOf(geojson: { features?: { geometry?: Geometry | null; nucleusGeometry?: Geometry | null }[] }): number[][][][] {
  const polygons: number[][][][] = [];
  for (const feature of geojson.features ?? []) {
    for (const geometry of [feature.geometry, feature.nucleusGeometry]) {
      if (geometry?.type === "Polygon") polygons.push(geometry.coordinates as number[][][]);
      else if (geometry?.type === "MultiPolygon") polygons.push(...(geometry.coordinates as number[][][][]));
    }
  }
  return polygons;
}

/**
 * Colours the pixels just inside each ring's edges. Vertices lie on pixel corners
 * (common/geojson-features.ts), so an edge runs between two rows or columns of pixels: the one on
 * the cell's side is the outline, the same pixels as the label mask's border. Exterior rings run
 * counter-clockwise by the numbers (RFC 7946, y down), with the cell on the left of (dx, dy), that
 * is towards (-dy, dx); holes the other way round, so the same side is the cell's.
 */
function drawOutlines(rgb: Uint8Array, width: number, height: number, polygons: number[][][][]): void {
  const paint = (x: number, y: number) => {
    if (x < 0 || y < 0 || x >= width || y >= height) return;
    const i = 3 * (y * width + x);
    [rgb[i], rgb[i + 1], rgb[i + 2]] = OUTLINE_RGB;
  };
  for (const rings of polygons) {
    rings.forEach((ring, r) => {
      let area = 0;
      for (let i = 0; i < ring.length - 1; i++) area += ring[i]![0]! * ring[i + 1]![1]! - ring[i + 1]![0]! * ring[i]![1]!;
      // A ring the other way round (another tool's file) is turned, as QuPath accepts either.
      const side = (r === 0) === area >= 0 ? 1 : -1;
      for (let i = 0; i < ring.length - 1; i++) {
        const [x0, y0] = ring[i] as [number, number];
        const [x1, y1] = ring[i + 1] as [number, number];
        const steps = Math.max(Math.abs(x1 - x0), Math.abs(y1 - y0));
        if (steps === 0) continue;
        const [dx, dy] = [(x1 - x0) / steps, (y1 - y0) / steps];
        // Each unit step's midpoint, moved a quarter pixel towards the cell, lies in the pixel to colour.
        for (let k = 0; k < steps; k++) {
          const mx = x0 + (k + 0.5) * dx - 0.25 * side * Math.sign(dy);
          const my = y0 + (k + 0.5) * dy + 0.25 * side * Math.sign(dx);
          paint(Math.floor(mx), Math.floor(my));
        }
      }
    });
  }
}

/**
 * Writes `dir/<name>-overlay.png` for the image at `imagePath` from `dir/rois.geojson`; throws
 * OverlaySkipped for an image above OVERLAY_MAX_PIXELS. Returns the file written.
 */
export async function writeOverlay(imagePath: string, dir: string): Promise<string> {
  const source = await fileSource(imagePath);
  let rgb: Uint8Array;
  let width: number;
  let height: number;
  try {
    const image = await openImageRegions(source);
    ({ width, height } = image);
    if (width * height > OVERLAY_MAX_PIXELS) {
      const megapixels = (width * height) / 2 ** 20;
      throw new OverlaySkipped(`${width}x${height} is ${megapixels.toFixed(0)} MP, more than the ${OVERLAY_MAX_PIXELS / 2 ** 20} MP an overlay is made for`);
    }
    // One channel decoded at a time, so memory holds one channel of floats besides the bytes.
    const channels: Uint8Array[] = [];
    for (let c = 0; c < Math.min(image.channels, 3); c++) {
      const plane = (await image.readRegion(0, 0, width, height, { channels: [c] })).data;
      channels.push(toBytes(plane, stretchOf(plane, width, height)));
    }
    rgb = toRgb(channels, width * height);
  } finally {
    await source.close();
  }
  drawOutlines(rgb, width, height, polygonsOf(JSON.parse(await readFile(join(dir, "rois.geojson"), "utf8"))));
  const target = join(dir, overlayFile(basename(imagePath)));
  const partial = `${target}.part`;
  try {
    await writeFile(partial, encodePng({ width, height, data: rgb, depth: 8, channels: 3 }));
    await rename(partial, target);
  } catch (error) {
    await rm(partial, { force: true });
    throw error;
  }
  return target;
}
