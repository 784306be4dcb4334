// Whole slides stored as TIFF, the way Aperio's scanners write SVS files: the full resolution in
// the first page, tiled, its tiles JPEG 2000 codestreams (TIFF compressions 33005 and 33003) or
// JPEG; then a thumbnail, a reduced level, a label and a macro image. The fixtures' tiles come from
// OpenJPEG's own encoder, lossless, so a decoded sample equals the one written.
import { beforeAll, describe, expect, it } from "vitest";
import { ImageDecodeError, probeImage } from "../../../common/decode/index.ts";
import { bytesSource, openImageRegions } from "../../../common/decode/region-reader.ts";
import { loadJpeg2000Encoder } from "../../fixtures/jpeg2000-encoder.ts";
import { type Compression, encodeTiff, type TiffPage } from "../../fixtures/tiff-writer.ts";

const WIDTH = 300;
const HEIGHT = 200;

/** Stain-like RGB that varies along both axes, so a misplaced tile shows. */
function tissue(width: number, height: number, seed = 0): Uint8Array {
  const values = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 3;
      values[i] = 120 + ((x * 7 + y * 3 + seed) % 120);
      values[i + 1] = 40 + ((x * 5 + y * 11) % 100);
      values[i + 2] = 110 + ((x + y * 13) % 110);
    }
  }
  return values;
}

const RGB = { samplesPerPixel: 3, kind: "uint8" } as const;

/** An SVS as Aperio lays it out: level 0, thumbnail, level 1, label, macro. */
function svs(
  compression: Compression,
  description = `Aperio Image Library v11.0.37\r\n${WIDTH}x${HEIGHT} (128x128) J2K/KDU Q=70|AppMag = 20|MPP = 0.4990`,
): Uint8Array {
  const pages: TiffPage[] = [
    { width: WIDTH, height: HEIGHT, ...RGB, values: tissue(WIDTH, HEIGHT), compression, tile: { width: 128, height: 128 }, description },
    { width: 75, height: 50, ...RGB, values: tissue(75, 50, 1), compression: "jpeg", description: "Aperio Image Library v11.0.37\n300x200 -> 75x50" },
    { width: 150, height: 100, ...RGB, values: tissue(150, 100, 2), compression, tile: { width: 128, height: 128 }, description: "Aperio -> 150x100" },
    { width: 60, height: 40, ...RGB, values: new Uint8Array(60 * 40 * 3).fill(250), compression: "lzw", description: "Aperio Image Library\nlabel 60x40" },
    { width: 120, height: 40, ...RGB, values: new Uint8Array(120 * 40 * 3).fill(30), compression: "jpeg", description: "Aperio Image Library\nmacro 120x40" },
  ];
  return encodeTiff(pages);
}

/** Channel c of pixel (x, y) in a planar region read at the image's origin. */
function sampleAt(data: Float32Array, width: number, height: number, c: number, x: number, y: number): number {
  return data[(c * height + y) * width + x]!;
}

beforeAll(loadJpeg2000Encoder);

describe("an Aperio SVS with JPEG 2000 tiles", () => {
  it("reads level 0 (compression 33005, RGB) region by region, every sample as written", async () => {
    const regions = await openImageRegions(bytesSource(svs("jpeg2000-33005")));
    expect({ width: regions.width, height: regions.height, channels: regions.channels }).toEqual({ width: WIDTH, height: HEIGHT, channels: 3 });
    // A region that crosses four tiles, the right and bottom ones past the image's edge.
    const [x, y, w, h] = [100, 90, 200, 110];
    const region = await regions.readRegion(x, y, w, h);
    const written = tissue(WIDTH, HEIGHT);
    let differing = 0;
    for (let c = 0; c < 3; c++)
      for (let row = 0; row < h; row++)
        for (let col = 0; col < w; col++) if (sampleAt(region.data, w, h, c, col, row) !== written[((y + row) * WIDTH + x + col) * 3 + c]) differing++;
    expect(differing).toBe(0);
  });

  it("turns compression 33003's YCbCr into RGB, within a step of rounding", async () => {
    const regions = await openImageRegions(bytesSource(svs("jpeg2000-33003")));
    const region = await regions.readRegion(0, 0, WIDTH, HEIGHT);
    const written = tissue(WIDTH, HEIGHT);
    let worst = 0;
    for (let c = 0; c < 3; c++)
      for (let i = 0; i < WIDTH * HEIGHT; i++) worst = Math.max(worst, Math.abs(region.data[c * WIDTH * HEIGHT + i]! - written[i * 3 + c]!));
    expect(worst).toBeLessThanOrEqual(2);
  });

  it("is one image: the thumbnail, label and macro are no planes, the tiled level 1 is a pyramid level", async () => {
    const bytes = svs("jpeg2000-33005");
    const regions = await openImageRegions(bytesSource(bytes));
    expect(regions.pages).toBe(1);
    expect(regions.levels).toEqual([{ width: 150, height: 100 }]);
    await expect(openImageRegions(bytesSource(bytes), { page: 3 })).rejects.toThrow("page 3 does not exist (file has 1 plane)");
    // Its level opens as an image of its own (what a preview reads instead of the full resolution).
    const level = await regions.readLevel!(0);
    expect({ width: level.width, height: level.height }).toEqual({ width: 150, height: 100 });
    const corner = await level.readRegion(140, 90, 10, 10);
    const written = tissue(150, 100, 2);
    expect(Math.abs(corner.data[0]! - written[(90 * 150 + 140) * 3]!)).toBeLessThanOrEqual(2);
    // The upload's probe says the same, and reads the MPP and the magnification from Aperio's description.
    const probe = probeImage(bytes, { regions: true });
    expect(probe).toMatchObject({
      format: "tiff",
      formatName: "Aperio SVS",
      width: WIDTH,
      height: HEIGHT,
      pages: 1,
      levels: [{ width: 150, height: 100 }],
      objectiveMagnification: 20,
      lossy: true,
      pixelSize: { x: 0.499, y: 0.499, source: "aperio" },
    });
  });

  it("treats a generic pyramidal TIFF (smaller pages after the first, no Aperio description) as one image too", async () => {
    const pages: TiffPage[] = [
      { width: 256, height: 256, ...RGB, values: tissue(256, 256), compression: "jpeg2000-34712", tile: { width: 128, height: 128 } },
      { width: 128, height: 128, ...RGB, values: tissue(128, 128), compression: "jpeg2000-34712", tile: { width: 128, height: 128 } },
    ];
    const regions = await openImageRegions(bytesSource(encodeTiff(pages)));
    expect(regions.pages).toBe(1);
    expect(regions.levels).toEqual([{ width: 128, height: 128 }]);
    expect(probeImage(encodeTiff(pages))).toMatchObject({ formatName: "pyramidal TIFF", levels: [{ width: 128, height: 128 }], objectiveMagnification: null });
    const region = await regions.readRegion(200, 200, 56, 56);
    expect(sampleAt(region.data, 56, 56, 0, 0, 0)).toBe(tissue(256, 256)[(200 * 256 + 200) * 3]);
  });

  it("keeps pages of one size as a stack's planes", async () => {
    const page = { width: 64, height: 64, ...RGB, values: tissue(64, 64), compression: "jpeg2000-34712", tile: { width: 64, height: 64 } } as const;
    expect((await openImageRegions(bytesSource(encodeTiff([page, page, page])))).pages).toBe(3);
  });
});

describe("a JPEG 2000 tile that is not what its page says", () => {
  /** The first tile's bytes in the file, found by the codestream's start (SOC, SIZ). */
  function firstTile(bytes: Uint8Array): number {
    for (let i = 0; i + 3 < bytes.length; i++) if (bytes[i] === 0xff && bytes[i + 1] === 0x4f && bytes[i + 2] === 0xff && bytes[i + 3] === 0x51) return i;
    throw new Error("no codestream");
  }

  it("is refused before decoding when it declares another size than the tile", async () => {
    const bytes = svs("jpeg2000-33005");
    const at = firstTile(bytes);
    new DataView(bytes.buffer).setUint32(at + 8, 60000); // Xsiz
    const regions = await openImageRegions(bytesSource(bytes));
    const refusal = regions.readRegion(0, 0, 64, 64);
    await expect(refusal).rejects.toThrow(ImageDecodeError);
    await expect(refusal).rejects.toThrow("TIFF JPEG 2000 block corrupt: a 60000x128 codestream of 3 components in a 128x128 block of 3 samples");
  });

  it("is refused as corrupt when OpenJPEG cannot decode it, and the next image decodes", async () => {
    const bytes = svs("jpeg2000-33005");
    const at = firstTile(bytes);
    // The main header's segments after SIZ (4 + 47 bytes for three components) overwritten: no COD,
    // no QCD, so OpenJPEG cannot tell how the tile was coded.
    bytes.fill(0, at + 51, at + 80);
    const regions = await openImageRegions(bytesSource(bytes));
    const refusal = regions.readRegion(0, 0, 64, 64);
    await expect(refusal).rejects.toThrow(ImageDecodeError);
    await expect(refusal).rejects.toThrow("JPEG 2000 data corrupt or truncated: A marker ID was expected");
    const again = await openImageRegions(bytesSource(svs("jpeg2000-33005")));
    const region = await again.readRegion(0, 0, 1, 1);
    expect(region.data[0]).toBe(tissue(WIDTH, HEIGHT)[0]);
  });
});
