// DICOM whole-slide levels (VL Whole Slide Microscopy Image), as hospital archives and the NCI
// Imaging Data Commons keep slides: one file per level, its total pixel matrix in tiles, one tile
// per frame. The fixtures are written by test/fixtures/dicom-writer.ts; their JPEG 2000 frames come
// from OpenJPEG's encoder (lossless), their JPEG frames from jpeg-js's.
import jpeg from "jpeg-js";
import { beforeAll, describe, expect, it } from "vitest";
import { decodeImage, ImageDecodeError, probeImage } from "../../../common/decode/index.ts";
import { bytesSource, openImageRegions } from "../../../common/decode/region-reader.ts";
import { cutTiles, type DicomLevelSpec, encodeDicomLevel, TRANSFER_SYNTAX } from "../../fixtures/dicom-writer.ts";
import { encodeJpeg2000, loadJpeg2000Encoder } from "../../fixtures/jpeg2000-encoder.ts";

const WIDTH = 300;
const HEIGHT = 200;
const TILE = 128;

/** Stain-like RGB that varies along both axes, so a misplaced tile shows. */
function tissue(width: number, height: number): Uint8Array {
  const values = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 3;
      values[i] = 120 + ((x * 7 + y * 3) % 120);
      values[i + 1] = 40 + ((x * 5 + y * 11) % 100);
      values[i + 2] = 110 + ((x + y * 13) % 110);
    }
  }
  return values;
}

const written = tissue(WIDTH, HEIGHT);
const tiles = () => cutTiles(written, WIDTH, HEIGHT, 3, TILE, TILE, 255);

function level(overrides: Partial<DicomLevelSpec> = {}): Uint8Array {
  return encodeDicomLevel({
    width: WIDTH,
    height: HEIGHT,
    tileWidth: TILE,
    tileHeight: TILE,
    samplesPerPixel: 3,
    photometric: "RGB",
    transferSyntax: TRANSFER_SYNTAX.explicitLittle,
    frames: tiles(),
    pixelSpacingMm: [0.00025, 0.00025],
    objectivePower: 40,
    ...overrides,
  });
}

const jpeg2000Frames = () => tiles().map((tile) => encodeJpeg2000(tile, TILE, TILE, 3, true));

/** Every sample of a region read at (x, y) against the written image: the largest difference. */
function largestDifference(data: Float32Array, x: number, y: number, w: number, h: number): number {
  let largest = 0;
  for (let c = 0; c < 3; c++) {
    for (let row = 0; row < h; row++) {
      for (let col = 0; col < w; col++) {
        const read = data[(c * h + row) * w + col]!;
        largest = Math.max(largest, Math.abs(read - written[((y + row) * WIDTH + x + col) * 3 + c]!));
      }
    }
  }
  return largest;
}

/** A region across four tiles, the right and bottom ones past the matrix's edge. */
const CROSSING = [100, 90, 200, 110] as const;

beforeAll(loadJpeg2000Encoder);

describe("a DICOM whole-slide level", () => {
  it("is probed from its header: the total pixel matrix, RGB, and PixelSpacing as the pixel size", () => {
    expect(probeImage(level())).toMatchObject({
      format: "dicom",
      width: WIDTH,
      height: HEIGHT,
      channels: 3,
      bitDepth: 8,
      pages: 1,
      lossy: false,
      pixelSize: { x: 0.25, y: 0.25, source: "dicom" },
      formatName: "DICOM whole-slide",
      levels: [],
      objectiveMagnification: 40,
    });
  });

  it("reads uncompressed TILED_FULL frames region by region, every sample as written", async () => {
    const regions = await openImageRegions(bytesSource(level()));
    expect({ format: regions.format, width: regions.width, height: regions.height, channels: regions.channels }).toEqual({
      format: "dicom",
      width: WIDTH,
      height: HEIGHT,
      channels: 3,
    });
    const region = await regions.readRegion(...CROSSING);
    expect(largestDifference(region.data, ...CROSSING)).toBe(0);
  });

  for (const offsetTable of ["none", "basic", "extended"] as const) {
    it(`reads JPEG 2000 frames found through ${offsetTable === "none" ? "no offset table" : `the ${offsetTable} offset table`}, every sample as written`, async () => {
      const file = level({ transferSyntax: TRANSFER_SYNTAX.jpeg2000Lossless, photometric: "YBR_RCT", frames: jpeg2000Frames(), offsetTable });
      const regions = await openImageRegions(bytesSource(file));
      const region = await regions.readRegion(...CROSSING);
      expect(largestDifference(region.data, ...CROSSING)).toBe(0);
    });
  }

  it("reads JPEG baseline frames (YBR_FULL_422) as RGB, within JPEG's error", async () => {
    const frames = tiles().map((tile) => {
      const rgba = new Uint8Array(TILE * TILE * 4);
      for (let i = 0; i < TILE * TILE; i++) rgba.set([tile[3 * i]!, tile[3 * i + 1]!, tile[3 * i + 2]!, 255], 4 * i);
      return new Uint8Array(jpeg.encode({ width: TILE, height: TILE, data: rgba }, 100).data);
    });
    const file = level({ transferSyntax: TRANSFER_SYNTAX.jpegBaseline, photometric: "YBR_FULL_422", frames, offsetTable: "basic" });
    expect(probeImage(file)).toMatchObject({ format: "dicom", lossy: true });
    const regions = await openImageRegions(bytesSource(file));
    const region = await regions.readRegion(...CROSSING);
    // The pattern's sharp steps ring a little even at quality 100; a tile in the wrong place or colour space is off by ~100.
    expect(largestDifference(region.data, ...CROSSING)).toBeLessThan(40);
  });

  it("places TILED_SPARSE frames by their positions, in any order, and reads a tile it leaves out as white glass", async () => {
    const all = tiles();
    // Three tiles of the six, written in reverse; the top-left one is left out.
    const kept = [5, 3, 1];
    const positions = kept.map((tile) => ({ x: (tile % 3) * TILE, y: Math.floor(tile / 3) * TILE }));
    const file = level({ frames: kept.map((tile) => all[tile]!), positions });
    const regions = await openImageRegions(bytesSource(file));
    const region = await regions.readRegion(0, 0, WIDTH, HEIGHT);
    const sample = (c: number, x: number, y: number) => region.data[(c * HEIGHT + y) * WIDTH + x]!;
    expect([sample(0, 10, 10), sample(1, 10, 10), sample(2, 10, 10)]).toEqual([255, 255, 255]);
    const [x, y] = [TILE + 5, 3];
    expect([sample(0, x, y), sample(1, x, y), sample(2, x, y)]).toEqual(Array.from(written.subarray((y * WIDTH + x) * 3, (y * WIDTH + x) * 3 + 3)));
    const [bx, by] = [2 * TILE + 7, TILE + 9];
    expect(sample(2, bx, by)).toBe(written[(by * WIDTH + bx) * 3 + 2]);
  });

  it("reads a fluorescence level's optical paths as its channels, 16-bit gray each", async () => {
    const [w, h, tile] = [40, 30, 16];
    const channel = (k: number) => {
      const bytes = new Uint8Array(w * h * 2);
      const view = new DataView(bytes.buffer);
      for (let i = 0; i < w * h; i++) view.setUint16(2 * i, k * 20000 + i, true);
      return cutTiles(bytes, w, h, 2, tile, tile);
    };
    const file = encodeDicomLevel({
      width: w,
      height: h,
      tileWidth: tile,
      tileHeight: tile,
      samplesPerPixel: 1,
      photometric: "MONOCHROME2",
      bitsAllocated: 16,
      transferSyntax: TRANSFER_SYNTAX.explicitLittle,
      opticalPaths: 2,
      frames: [...channel(0), ...channel(1)],
    });
    expect(probeImage(file)).toMatchObject({ channels: 2, bitDepth: 16, pixelSize: null });
    const regions = await openImageRegions(bytesSource(file));
    const region = await regions.readRegion(10, 12, 25, 17, { channels: [1, 0] });
    // Channel 1 first, as asked: pixel (10 + col, 12 + row) of path 1, then path 0.
    expect(region.data[0]).toBe(20000 + 12 * w + 10);
    expect(region.data[25 * 17 + 24 + 16 * 25]).toBe(28 * w + 34);
  });
});

describe("a DICOM series uploaded as one ZIP of its files", () => {
  it("reads its largest level, lists the others as levels and opens them, never the label beside them", async () => {
    const { zipSync } = await import("fflate");
    const half = cutTiles(tissue(150, 100), 150, 100, 3, TILE, TILE, 255);
    const series = zipSync(
      {
        "series/label.dcm": level({ imageType: "ORIGINAL\\PRIMARY\\LABEL\\NONE" }),
        "series/level-1.dcm": encodeDicomLevel({
          width: 150,
          height: 100,
          tileWidth: TILE,
          tileHeight: TILE,
          samplesPerPixel: 3,
          photometric: "RGB",
          transferSyntax: TRANSFER_SYNTAX.explicitLittle,
          frames: half,
        }),
        "series/level-0.dcm": level(),
      },
      { level: 0 },
    );
    expect(probeImage(series, { regions: true })).toMatchObject({
      format: "dicom",
      formatName: "DICOM whole-slide series (ZIP)",
      width: WIDTH,
      height: HEIGHT,
      levels: [{ width: 150, height: 100 }],
      pixelSize: { x: 0.25, y: 0.25, source: "dicom" },
    });
    const regions = await openImageRegions(bytesSource(series));
    expect(largestDifference((await regions.readRegion(...CROSSING)).data, ...CROSSING)).toBe(0);
    const reduced = await regions.readLevel!(0);
    const corner = await reduced.readRegion(140, 90, 10, 10);
    expect(corner.data[0]).toBe(tissue(150, 100)[(90 * 150 + 140) * 3]);
  });
});

describe("DICOM files the reader refuses, each before reading any frame", () => {
  const refusal = (file: Uint8Array) => {
    try {
      probeImage(file, { regions: true });
    } catch (error) {
      if (error instanceof ImageDecodeError) return { kind: error.kind, message: error.message };
      throw error;
    }
    throw new Error("accepted");
  };

  it("the slide's label image: its pyramid's level is what is segmented", () => {
    expect(refusal(level({ imageType: "ORIGINAL\\PRIMARY\\LABEL\\NONE" }))).toEqual({
      kind: "unsupported",
      message: expect.stringMatching(/the slide's label image, not its pyramid: upload the file of the full-resolution level/),
    });
  });

  it("a transfer syntax it does not decode, named in words with a way to transcode it", () => {
    expect(refusal(level({ transferSyntax: TRANSFER_SYNTAX.jpegLs, frames: [new Uint8Array(8)], declaredFrames: 6 }))).toEqual({
      kind: "unsupported",
      message: expect.stringMatching(/JPEG-LS \(lossless\) \(1\.2\.840\.10008\.1\.2\.4\.80\) is not supported.*gdcmconv/),
    });
  });

  it("a DICOM image that is no slide (a CT's SOP class)", () => {
    expect(refusal(level({ sopClass: "1.2.840.10008.5.1.4.1.1.2" }))).toMatchObject({
      kind: "unsupported",
      message: expect.stringMatching(/not a whole-slide image/),
    });
  });

  it("a header declaring millions of frames", () => {
    expect(refusal(level({ declaredFrames: 5_000_000 }))).toEqual({
      kind: "too-large",
      message: expect.stringMatching(/5000000 frames, more than the 1048576/),
    });
  });

  it("uncompressed Pixel Data shorter than its frames", () => {
    expect(refusal(level({ frames: tiles().slice(0, 5), declaredFrames: 6 }))).toMatchObject({ message: expect.stringMatching(/not the 6 frames/) });
  });

  for (const offsetTable of ["basic", "extended"] as const) {
    it(`a ${offsetTable} offset table that points past the end of the file`, () => {
      const file = level({
        transferSyntax: TRANSFER_SYNTAX.jpeg2000Lossless,
        photometric: "YBR_RCT",
        frames: jpeg2000Frames(),
        offsetTable,
        forgeOffsets: (offsets) => offsets.map((o, k) => (k === 4 ? 0x7fff_0000 : o)),
      });
      expect(refusal(file)).toMatchObject({ kind: "invalid", message: expect.stringMatching(/places frame 5 at byte \d+, past the end/) });
    });
  }

  it("is read tile by tile, never decoded whole", () => {
    expect(() => decodeImage(level())).toThrow(/read by region, not decoded whole/);
  });
});
