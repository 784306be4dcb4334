// Small valid TIFF, PNG and JPEG files covering the decoders' paths (strips and tiles, every TIFF
// compression, predictor, planar, BigTIFF, big-endian, multi-page hyperstacks, PNG colour types and
// depths, palette, baseline JPEG; strips that share their data): the seeds the fuzz suite mutates.
import { encode as encodePng } from "fast-png";
import jpeg from "jpeg-js";
import { interlacedGrayPng, stripsSharingLzwData } from "../../fixtures/hostile-images.ts";
import { encodeTiff, type TiffPage } from "../../fixtures/tiff-writer.ts";

export interface Seed {
  name: string;
  bytes: Uint8Array;
  /** A hostile seed: the decoder refuses it as it stands (its mutations may decode or not). */
  refused?: true;
}

function ramp(n: number, modulo: number): number[] {
  return Array.from({ length: n }, (_, i) => (i * 37 + (i >> 3) * 11) % modulo);
}

function tiffPage(width: number, height: number, spp: number, extra: Partial<TiffPage>): TiffPage {
  return { width, height, samplesPerPixel: spp, kind: "uint16", values: ramp(width * height * spp, 65536), ...extra };
}

export function fuzzSeeds(): Seed[] {
  const tiff = (name: string, pages: TiffPage[], options?: Parameters<typeof encodeTiff>[1]): Seed => ({
    name: `TIFF ${name}`,
    bytes: encodeTiff(pages, options),
  });
  const png = (name: string, data: Parameters<typeof encodePng>[0]): Seed => ({ name: `PNG ${name}`, bytes: encodePng(data) });
  const rgba = new Uint8Array(24 * 16 * 4).map((_, i) => (i * 29) % 256);
  return [
    tiff("uint8 strips", [tiffPage(24, 16, 1, { kind: "uint8", values: ramp(24 * 16, 256), rowsPerStrip: 5 })]),
    tiff("uint16 LZW tiles", [tiffPage(40, 24, 1, { compression: "lzw", tile: { width: 16, height: 16 } })]),
    tiff("uint16 Deflate predictor", [tiffPage(24, 16, 1, { compression: "deflate", predictor: 2, rowsPerStrip: 4 })]),
    tiff("RGB PackBits planar", [
      tiffPage(20, 12, 3, { kind: "uint8", values: ramp(20 * 12 * 3, 256), compression: "packbits", planar: true, rowsPerStrip: 6 }),
    ]),
    tiff("float32 BigTIFF", [tiffPage(16, 16, 1, { kind: "float32", values: ramp(256, 1000).map((v) => v / 7) })], { bigTiff: true }),
    tiff("int16 big-endian LZW", [tiffPage(18, 10, 2, { kind: "int16", values: ramp(360, 30000), compression: "lzw" })], { bigEndian: true }),
    tiff(
      "ImageJ hyperstack",
      [0, 1, 2, 3].map(() => tiffPage(12, 8, 1, { description: "ImageJ=1.54f\nimages=4\nchannels=2\nslices=2\n" })),
    ),
    tiff(
      "OME-TIFF",
      [0, 1].map(() =>
        tiffPage(12, 8, 1, { compression: "deflate", description: '<OME><Image><Pixels DimensionOrder="XYCZT" SizeC="2" SizeZ="1" SizeT="1"/></Image></OME>' }),
      ),
    ),
    png("gray 16-bit", { width: 24, height: 16, data: new Uint16Array(ramp(384, 65536)), depth: 16, channels: 1 }),
    png("gray 8-bit", { width: 24, height: 16, data: new Uint8Array(ramp(384, 256)), depth: 8, channels: 1 }),
    png("RGBA", { width: 24, height: 16, data: rgba, depth: 8, channels: 4 }),
    png("palette", {
      width: 24,
      height: 16,
      data: new Uint8Array(ramp(384, 4)),
      depth: 8,
      channels: 1,
      palette: [
        [0, 0, 0],
        [255, 0, 0],
        [0, 255, 0],
        [0, 0, 255],
      ],
    }),
    { name: "PNG gray Adam7-interlaced", bytes: interlacedGrayPng(19, 13, (x, y) => (x * 7 + y * 13) % 256) },
    png("gray 1-bit", { width: 20, height: 9, data: new Uint8Array(ramp(27, 256)), depth: 1, channels: 1 }),
    { name: "JPEG baseline", bytes: new Uint8Array(jpeg.encode({ width: 24, height: 16, data: rgba }, 85).data) },
    // Issue 24's overlap: strips that all name one run of LZW data. Small here, so the mutations
    // explore the overlap check and the blocks around it, not the cost.
    { name: "TIFF strips sharing LZW data", bytes: stripsSharingLzwData(16, 8, 64), refused: true },
  ];
}
