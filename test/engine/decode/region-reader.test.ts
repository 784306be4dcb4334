// Reading rectangles of an image without reading the file whole (region-reader.ts). The rule every
// test checks: a region read equals, exactly, the same rectangle cut from decodeImage's decode of
// the whole file, for every format variant, and reads only what the region needs.
import { open, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { zlibSync } from "fflate";
import jpeg from "jpeg-js";
import { afterAll, describe, expect, it } from "vitest";
import { decodeImage, ImageDecodeError, type DecodedImage } from "../../../common/decode/index.ts";
import { type ByteSource, ByteSourceError, bytesSource, fileSource, httpRangeSource } from "../../../common/decode/byte-source.ts";
import { openImageRegions } from "../../../common/decode/region-reader.ts";
import { MAX_TIFF_TAG_VALUES } from "../../../schema/image-formats/index.ts";
import { crc32 } from "../../../common/crc32.ts";
import { deflateBomb } from "../../fixtures/deflate-bomb.ts";
import { fuzzSeeds } from "../helpers/fuzz-seeds.ts";
import {
  channelPagesSharingLzwData,
  chunk,
  ihdr,
  iend,
  interlacedGrayPng,
  rawPng,
  rawTiff,
  sharedTileSlide,
  stripsSharingLzwData,
} from "../../fixtures/hostile-images.ts";
import { mutate, repairPngChecksums } from "../helpers/mutate.ts";
import { encodePng, type PngImage } from "../helpers/png-writer.ts";
import { encodeTiff, encodeTiffParts, type SampleKind, type TiffPage } from "../../fixtures/tiff-writer.ts";

type Region = [x: number, y: number, w: number, h: number];

/** The rectangle cut from a whole decode, written independently of the reader's own cutting. */
function cut(image: DecodedImage, [x, y, w, h]: Region, channels = Array.from({ length: image.channels }, (_, c) => c)): Float32Array {
  const out: number[] = [];
  for (const c of channels)
    for (let row = y; row < y + h; row++) for (let col = x; col < x + w; col++) out.push(image.data[(c * image.height + row) * image.width + col]!);
  return Float32Array.from(out);
}

/** Deterministic pseudo-random integers. */
function random(seed: number): (n: number) => number {
  let state = seed >>> 0 || 1;
  return (n) => {
    state = (Math.imul(state, 1_103_515_245) + 12_345) >>> 0;
    return (state >>> 8) % n;
  };
}

/** Whole image, 1-pixel regions in the corners, single rows and columns, edge strips, and random rectangles. */
function regionsOf(width: number, height: number, seed = 1): Region[] {
  const next = random(seed);
  const regions: Region[] = [
    [0, 0, width, height],
    [0, 0, 1, 1],
    [width - 1, 0, 1, 1],
    [0, height - 1, 1, 1],
    [width - 1, height - 1, 1, 1],
    [0, Math.floor(height / 2), width, 1],
    [Math.floor(width / 2), 0, 1, height],
    [width - 3, 0, 3, height],
    [0, height - 2, width, 2],
    [5, 3, width - 11, height - 7],
  ];
  for (let i = 0; i < 12; i++) {
    const x = next(width);
    const y = next(height);
    regions.push([x, y, 1 + next(width - x), 1 + next(height - y)]);
  }
  return regions;
}

/** Opens `bytes` for regions and checks every region against the whole decode (and a channel selection). */
async function expectRegionsEqualWholeDecode(bytes: Uint8Array, options: { page?: number } = {}): Promise<DecodedImage> {
  const whole = decodeImage(bytes, options);
  const image = await openImageRegions(bytesSource(bytes), options);
  expect(image).toMatchObject({
    width: whole.width,
    height: whole.height,
    channels: whole.channels,
    bitDepth: whole.bitDepth,
    sampleFormat: whole.sampleFormat,
  });
  for (const region of regionsOf(whole.width, whole.height)) {
    const read = await image.readRegion(...region);
    expect({ width: read.width, height: read.height, channels: read.channels }).toEqual({ width: region[2], height: region[3], channels: whole.channels });
    expect(read.data, `region ${region}`).toEqual(cut(whole, region));
  }
  const reversed = [...Array.from({ length: whole.channels }, (_, c) => c)].reverse();
  const selected = await image.readRegion(1, 2, whole.width - 2, whole.height - 3, { channels: reversed });
  expect(selected.data).toEqual(cut(whole, [1, 2, whole.width - 2, whole.height - 3], reversed));
  return whole;
}

/** Smooth values (JPEG-friendly) spanning the sample type's range, interleaved. */
function pattern(width: number, height: number, spp: number, kind: SampleKind): number[] {
  const values: number[] = [];
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      for (let s = 0; s < spp; s++) {
        const v = (x * 5 + y * 3 + s * 40) % 200;
        values.push(
          kind === "uint8"
            ? v
            : kind === "uint16"
              ? v * 300 + x
              : kind === "uint32"
                ? v * 16_777_259 + x
                : kind === "int16"
                  ? (v - 100) * 250
                  : (v - 100) / 7 + 0.125,
        );
      }
    }
  }
  return values;
}

/** A source that counts what is read through it. */
function counting(source: ByteSource): ByteSource & { bytes: number; reads: number } {
  const counter = {
    size: source.size,
    bytes: 0,
    reads: 0,
    read(offset: number, length: number) {
      counter.bytes += length;
      counter.reads++;
      return source.read(offset, length);
    },
  };
  return counter;
}

describe("reading regions of a TIFF", () => {
  const width = 37;
  const height = 23;
  const cases: { name: string; page: Omit<TiffPage, "width" | "height" | "values">; bigTiff?: boolean; bigEndian?: boolean }[] = [
    { name: "uncompressed 8-bit gray strips", page: { samplesPerPixel: 1, kind: "uint8", rowsPerStrip: 5 } },
    { name: "LZW 16-bit RGB strips", page: { samplesPerPixel: 3, kind: "uint16", compression: "lzw", rowsPerStrip: 4 } },
    {
      name: "Deflate (8) 32-bit float strips, floating-point predictor",
      page: { samplesPerPixel: 2, kind: "float32", compression: "deflate", predictor: 3, rowsPerStrip: 6 },
    },
    { name: "Deflate (32946) 16-bit signed strips", page: { samplesPerPixel: 1, kind: "int16", compression: "deflate-32946", rowsPerStrip: 7 } },
    { name: "PackBits 32-bit strips", page: { samplesPerPixel: 1, kind: "uint32", compression: "packbits", rowsPerStrip: 3 } },
    { name: "uncompressed 16-bit strips, horizontal predictor", page: { samplesPerPixel: 2, kind: "uint16", predictor: 2, rowsPerStrip: 4 } },
    { name: "uncompressed 8-bit RGB tiles", page: { samplesPerPixel: 3, kind: "uint8", tile: { width: 16, height: 16 } } },
    {
      name: "LZW 16-bit RGB tiles, horizontal predictor",
      page: { samplesPerPixel: 3, kind: "uint16", compression: "lzw", predictor: 2, tile: { width: 16, height: 16 } },
    },
    {
      name: "Deflate 64-bit float tiles, floating-point predictor",
      page: { samplesPerPixel: 1, kind: "float64", compression: "deflate", predictor: 3, tile: { width: 16, height: 32 } },
    },
    {
      name: "PackBits planar 16-bit RGB tiles",
      page: { samplesPerPixel: 3, kind: "uint16", compression: "packbits", planar: true, tile: { width: 16, height: 16 } },
    },
    { name: "uncompressed planar 32-bit float tiles", page: { samplesPerPixel: 3, kind: "float32", planar: true, tile: { width: 32, height: 16 } } },
    { name: "Deflate planar 8-bit strips", page: { samplesPerPixel: 2, kind: "uint8", compression: "deflate", planar: true, rowsPerStrip: 5 } },
    {
      name: "BigTIFF, big-endian Deflate 16-bit tiles",
      page: { samplesPerPixel: 1, kind: "uint16", compression: "deflate", tile: { width: 16, height: 16 } },
      bigTiff: true,
      bigEndian: true,
    },
    { name: "BigTIFF uncompressed 16-bit signed strips", page: { samplesPerPixel: 1, kind: "int16", rowsPerStrip: 9 }, bigTiff: true },
    {
      name: "JPEG RGB tiles sharing JPEGTables (YCbCr)",
      page: { samplesPerPixel: 3, kind: "uint8", compression: "jpeg", jpegTables: true, tile: { width: 16, height: 16 } },
    },
    { name: "JPEG RGB strips, each a complete JPEG stream", page: { samplesPerPixel: 3, kind: "uint8", compression: "jpeg", rowsPerStrip: 8 } },
  ];

  for (const { name, page, bigTiff, bigEndian } of cases) {
    it(`reads every region of ${name} exactly as the whole decode has it`, async () => {
      const values = pattern(width, height, page.samplesPerPixel, page.kind);
      const bytes = encodeTiff([{ ...page, width, height, values }], { bigTiff, bigEndian });
      const whole = await expectRegionsEqualWholeDecode(bytes);
      if (page.compression !== "jpeg") {
        // Lossless: the whole decode is the values written.
        const planar = new Float32Array(values.length);
        const spp = page.samplesPerPixel;
        for (let i = 0; i < width * height; i++) for (let s = 0; s < spp; s++) planar[s * width * height + i] = values[i * spp + s]!;
        expect(whole.data).toEqual(planar);
      } else {
        // JPEG is lossy: close to the values written (a YCbCr/RGB mix-up is off by tens), and each
        // region still equals the whole decode exactly.
        let error = 0;
        for (let i = 0; i < width * height; i++) for (let s = 0; s < 3; s++) error += Math.abs(whole.data[s * width * height + i]! - values[i * 3 + s]!);
        expect(error / values.length).toBeLessThan(6);
      }
    });
  }

  it("reads a region of one plane of an OME-TIFF, channels gathered from their pages", async () => {
    const ome = `<?xml version="1.0"?><OME xmlns="http://www.openmicroscopy.org/Schemas/OME/2016-06"><Image ID="Image:0"><Pixels ID="Pixels:0" DimensionOrder="XYZCT" Type="uint16" SizeX="${width}" SizeY="${height}" SizeC="2" SizeZ="3" SizeT="1"/></Image></OME>`;
    const pages = [0, 1, 2, 3, 4, 5].map(
      (k): TiffPage => ({
        width,
        height,
        samplesPerPixel: 1,
        kind: "uint16",
        compression: "lzw",
        tile: { width: 16, height: 16 },
        values: pattern(width, height, 1, "uint16").map((v) => v + k * 1000),
        ...(k === 0 ? { description: ome } : {}),
      }),
    );
    const bytes = encodeTiff(pages);
    const image = await openImageRegions(bytesSource(bytes), { page: 1 });
    expect(image).toMatchObject({ channels: 2, pages: 3 });
    await expectRegionsEqualWholeDecode(bytes, { page: 1 });
    await expectRegionsEqualWholeDecode(bytes, { page: 2 });
    await expect(openImageRegions(bytesSource(bytes), { page: 3 })).rejects.toThrow(/page 3 does not exist/);
  });

  it("reads the chosen page of a plain multi-page TIFF", async () => {
    const pages = [0, 1, 2].map(
      (k): TiffPage => ({ width: width + k, height, samplesPerPixel: 1, kind: "uint8", values: pattern(width + k, height, 1, "uint8") }),
    );
    await expectRegionsEqualWholeDecode(encodeTiff(pages), { page: 2 });
  });

  it("reads the full-resolution image of a pyramid and lists its SubIFD levels", async () => {
    const level = (scale: number): TiffPage => ({
      width: Math.ceil(width / scale),
      height: Math.ceil(height / scale),
      samplesPerPixel: 1,
      kind: "uint8",
      compression: "deflate",
      tile: { width: 16, height: 16 },
      values: pattern(Math.ceil(width / scale), Math.ceil(height / scale), 1, "uint8").map((v) => 255 - v),
    });
    const bytes = encodeTiff([{ ...level(1), values: pattern(width, height, 1, "uint8"), levels: [level(2), level(4)] }], { bigTiff: true });
    const image = await openImageRegions(bytesSource(bytes));
    expect(image.levels).toEqual([
      { width: 19, height: 12 },
      { width: 10, height: 6 },
    ]);
    await expectRegionsEqualWholeDecode(bytes);
    expect(Array.from((await image.readRegion(3, 2, 1, 1)).data)).toEqual([pattern(width, height, 1, "uint8")[2 * width + 3]!]);
    // A level opens as an image of its own (what a preview reads instead of the full resolution).
    const quarter = await image.readLevel!(1);
    expect({ width: quarter.width, height: quarter.height, levels: quarter.levels }).toEqual({ width: 10, height: 6, levels: [] });
    expect(Array.from((await quarter.readRegion(3, 2, 1, 1)).data)).toEqual([255 - pattern(10, 6, 1, "uint8")[2 * 10 + 3]!]);
  });

  it("refuses regions outside the image or larger than one read may decode", async () => {
    const bytes = encodeTiff([{ width, height, samplesPerPixel: 1, kind: "uint8", values: pattern(width, height, 1, "uint8") }]);
    const image = await openImageRegions(bytesSource(bytes));
    for (const region of [
      [-1, 0, 1, 1],
      [0, 0, width + 1, 1],
      [0, height, 1, 1],
      [0, 0, 0, 1],
      [0.5, 0, 1, 1],
    ] as Region[]) {
      await expect(image.readRegion(...region), `${region}`).rejects.toThrow(RangeError);
    }
    await expect(image.readRegion(0, 0, 1, 1, { channels: [1] })).rejects.toThrow(/channel 1 does not exist/);
  });
});

describe("reading regions of a TIFF far larger than one decode", () => {
  // 100000² 8-bit pixels in 256² uncompressed tiles that all share one stored tile: 10^10 samples,
  // past MAX_SAMPLES (2^28), in a 1.3 MB file. decodeImage refuses it; regions of it read.
  const side = 100_000;
  const tile = 256;
  const bytes = sharedTileSlide(side, tile);

  it("reads regions anywhere in it, and refuses a region past MAX_REGION_SAMPLES", async () => {
    expect(() => decodeImage(bytes)).toThrow(/image too large/);
    const image = await openImageRegions(bytesSource(bytes));
    expect(image).toMatchObject({ width: side, height: side, channels: 1 });
    // (99990, 99990) lies in the last tile, at (99990 - 390·256, same) = (150, 150) of it.
    const region = await image.readRegion(side - 10, side - 10, 10, 10);
    const expected = Array.from({ length: 100 }, (_, i) => 150 + (i % 10) + 150 + Math.floor(i / 10));
    expect(Array.from(region.data)).toEqual(expected.map((v) => v & 0xff));
    await expect(image.readRegion(0, 0, 20_000, 20_000)).rejects.toThrow(/region too large/);
  });
});

describe("reading regions of files through a byte source", () => {
  const dir = mkdtemp(join(tmpdir(), "region-reads-"));
  afterAll(async () => rm(await dir, { recursive: true, force: true }));

  it("reads a small region of a 3000x2000 tiled BigTIFF file by reading a small fraction of it", async () => {
    const [w, h] = [3000, 2000];
    const next = random(7);
    const values = Uint16Array.from({ length: w * h }, (_, i) => ((i % w) * 3 + Math.floor(i / w) * 5 + next(64)) & 0xffff);
    const bytes = encodeTiff([{ width: w, height: h, samplesPerPixel: 1, kind: "uint16", compression: "deflate", tile: { width: 256, height: 256 }, values }], {
      bigTiff: true,
    });
    const path = join(await dir, "big.tif");
    await writeFile(path, bytes);
    const file = await fileSource(path);
    try {
      const source = counting(file);
      const image = await openImageRegions(source);
      const region = await image.readRegion(1030, 530, 100, 100);
      expect(region.data).toEqual(cut(decodeImage(bytes), [1030, 530, 100, 100]));
      // One 256² tile (about 100 KB) and the directory, of a 10 MB file.
      expect(source.bytes / file.size).toBeLessThan(0.03);
      expect(source.reads).toBeLessThan(10);
    } finally {
      await file.close();
    }
  });

  it("reads tiles stored past 4 GiB in a sparse BigTIFF file", async () => {
    const [w, h] = [300, 200];
    const values = pattern(w, h, 1, "uint16");
    const { size, parts } = encodeTiffParts(
      [{ width: w, height: h, samplesPerPixel: 1, kind: "uint16", compression: "lzw", tile: { width: 64, height: 64 }, values }],
      {
        bigTiff: true,
        gap: 5 * 2 ** 30,
      },
    );
    const path = join(await dir, "sparse.tif");
    const handle = await open(path, "w");
    for (const part of parts) await handle.write(part.bytes, 0, part.bytes.length, part.at);
    await handle.close();
    const file = await fileSource(path);
    try {
      expect(file.size).toBe(size);
      expect(file.size).toBeGreaterThan(5 * 2 ** 30);
      const image = await openImageRegions(file);
      const region = await image.readRegion(100, 50, 130, 90);
      const expected = Float32Array.from({ length: 130 * 90 }, (_, i) => values[(50 + Math.floor(i / 130)) * w + 100 + (i % 130)]!);
      expect(region.data).toEqual(expected);
    } finally {
      await file.close();
    }
  });

  /** A server that answers Range requests over `bytes`, or misbehaves as told. */
  function server(bytes: Uint8Array, misbehave?: "ignore-range" | "short" | "wrong-range"): typeof fetch {
    return (async (_url: string | URL | Request, init?: RequestInit) => {
      const range = /bytes=(\d+)-(\d+)/.exec(new Headers(init?.headers).get("range") ?? "")!;
      const [start, end] = [Number(range[1]), Number(range[2])];
      if (misbehave === "ignore-range") return new Response(bytes.slice(), { status: 200 });
      const body = bytes.slice(start, misbehave === "short" ? end : end + 1);
      const first = misbehave === "wrong-range" ? start + 1 : start;
      return new Response(body, { status: 206, headers: { "content-range": `bytes ${first}-${end}/${bytes.length}` } });
    }) as typeof fetch;
  }

  it("reads regions over HTTP Range requests, and refuses answers that are not the range asked for", async () => {
    const values = pattern(200, 150, 3, "uint8");
    const bytes = encodeTiff([{ width: 200, height: 150, samplesPerPixel: 3, kind: "uint8", compression: "lzw", tile: { width: 64, height: 64 }, values }]);
    const url = "https://bucket.example/image.tif?X-Amz-Signature=secret";
    const image = await openImageRegions(httpRangeSource(url, bytes.length, server(bytes)));
    expect((await image.readRegion(60, 60, 70, 10)).data).toEqual(cut(decodeImage(bytes), [60, 60, 70, 10]));
    for (const misbehave of ["ignore-range", "short", "wrong-range"] as const) {
      const error = await openImageRegions(httpRangeSource(url, bytes.length, server(bytes, misbehave))).catch((e: unknown) => e);
      expect(error, misbehave).toBeInstanceOf(ByteSourceError);
      expect((error as Error).message).not.toContain("secret");
    }
  });
});

describe("reading regions of a PNG", () => {
  const width = 29;
  const height = 17;
  const next = random(3);
  const noise = (n: number, max: number) => Array.from({ length: n }, () => next(max + 1));
  const palette = Array.from({ length: 16 }, (_, i): [number, number, number] => [i * 16, 255 - i * 8, (i * 37) % 256]);
  const cases: { name: string; image: PngImage; expected: number[][] }[] = [];
  const add = (name: string, image: Omit<PngImage, "width" | "height" | "idatBytes">, expected?: (values: number[]) => number[][]) => {
    const values = Array.from(image.values);
    cases.push({ name, image: { ...image, width, height, idatBytes: 37 }, expected: expected ? expected(values) : [values] });
  };
  add("8-bit gray", { colourType: 0, bitDepth: 8, values: noise(width * height, 255) });
  add("16-bit gray", { colourType: 0, bitDepth: 16, values: noise(width * height, 65535) });
  add("1-bit gray", { colourType: 0, bitDepth: 1, values: noise(width * height, 1) });
  // Alpha is not a channel: gray + alpha reads as gray, RGBA as RGB.
  const withoutAlpha = (stored: number) => (values: number[]) => [values.filter((_, i) => i % stored !== stored - 1)];
  add("8-bit gray and alpha", { colourType: 4, bitDepth: 8, values: noise(2 * width * height, 255) }, withoutAlpha(2));
  add("8-bit RGB", { colourType: 2, bitDepth: 8, values: noise(3 * width * height, 255) });
  add("16-bit RGBA", { colourType: 6, bitDepth: 16, values: noise(4 * width * height, 65535) }, withoutAlpha(4));
  add("4-bit palette", { colourType: 3, bitDepth: 4, palette, values: noise(width * height, 15) }, (indices) => [indices.flatMap((i) => palette[i]!)]);

  for (const { name, image } of cases) {
    it(`reads regions of ${name} in raster order, backwards and at random, exactly as the whole decode has them`, async () => {
      const bytes = encodePng(image);
      const whole = decodeImage(bytes);
      const regions = await openImageRegions(bytesSource(bytes));
      expect(regions).toMatchObject({ format: "png", width, height, channels: whole.channels, bitDepth: whole.bitDepth });
      const blocks: Region[] = [];
      for (let y = 0; y < height; y += 5) for (let x = 0; x < width; x += 8) blocks.push([x, y, Math.min(8, width - x), Math.min(5, height - y)]);
      for (const order of [blocks, [...blocks].reverse(), regionsOf(width, height, 5)]) {
        for (const region of order) expect((await regions.readRegion(...region)).data, `${name} ${region}`).toEqual(cut(whole, region));
      }
    });
  }

  it("decodes the written PNGs as written (the writer agrees with fast-png)", () => {
    for (const { image, expected } of cases) {
      const whole = decodeImage(encodePng(image));
      const channels = whole.channels;
      const interleaved = Array.from({ length: width * height * channels }, (_, i) => whole.data[(i % channels) * width * height + Math.floor(i / channels)]!);
      expect(interleaved).toEqual(expected[0]);
    }
  });

  it("reads the first rows of a large PNG without reading the rest of the file", async () => {
    const [w, h] = [1000, 1500];
    const bytes = encodePng({ width: w, height: h, colourType: 0, bitDepth: 8, values: noise(w * h, 255), idatBytes: 8192 });
    const source = counting(bytesSource(bytes));
    const image = await openImageRegions(source);
    const region = await image.readRegion(100, 0, 50, 10);
    expect(region.data).toEqual(cut(decodeImage(bytes), [100, 0, 50, 10]));
    // The header, the tail and one 256 KiB window of the 1.2 MB file.
    expect(source.bytes).toBeLessThan(300 * 1024);
    expect(source.bytes / bytes.length).toBeLessThan(0.25);
  });

  it("reads an interlaced PNG by decoding it whole", async () => {
    const bytes = interlacedGrayPng(13, 11, (x, y) => (x * 7 + y * 13) % 256);
    await expectRegionsEqualWholeDecode(bytes);
  });

  it("refuses image data with a bad CRC, cut short, or inflating past the image", async () => {
    const good = encodePng({ width, height, colourType: 0, bitDepth: 8, values: noise(width * height, 255), idatBytes: 37 });
    const badCrc = good.slice();
    const firstIdat = findChunk(good, "IDAT");
    const crcAt = firstIdat + 8 + new DataView(good.buffer).getUint32(firstIdat);
    badCrc[crcAt] = badCrc[crcAt]! ^ 0xff;
    await expect((await openImageRegions(bytesSource(badCrc))).readRegion(0, 0, 1, 1)).rejects.toThrow(/CRC mismatch/);

    const data = new Uint8Array(height * (width + 1)).map((_, i) => i & 0x7f);
    const short = rawPng(ihdr(width, height, 8, 0), chunk("IDAT", zlibSync(data).subarray(0, 40)), iend());
    await expect(openImageRegions(bytesSource(short)).then((image) => image.readRegion(0, height - 1, 1, 1))).rejects.toThrow(ImageDecodeError);

    const bomb = rawPng(ihdr(1, 1, 8, 0), chunk("IDAT", deflateBomb(2 ** 26)), iend());
    await expect((await openImageRegions(bytesSource(bomb))).readRegion(0, 0, 1, 1)).rejects.toThrow(/inflates past the 2 bytes/);
  });
});

describe("reading regions of a JPEG", () => {
  it("decodes it whole and cuts regions out", async () => {
    const [width, height] = [40, 30];
    const rgba = Uint8Array.from({ length: width * height * 4 }, (_, i) => (i % 4 === 3 ? 255 : (i * 3) % 256));
    const bytes = new Uint8Array(jpeg.encode({ width, height, data: rgba }, 90).data);
    await expectRegionsEqualWholeDecode(bytes);
  });
});

describe("hostile files read by region", () => {
  const gray = (extra: [number, number, number | bigint, number | bigint][], tile = 16, side = 64): [number, number, number | bigint, number | bigint][] => [
    [256, 4, 1, side],
    [257, 4, 1, side],
    [258, 3, 1, 8],
    [259, 3, 1, 8],
    [262, 3, 1, 1],
    [277, 3, 1, 1],
    [322, 4, 1, tile],
    [323, 4, 1, tile],
    ...extra,
  ];

  // Issue 24: compressed blocks that name the same bytes would cost blocks x file size to read.
  it("compressed strips that all name one run of LZW clear codes: refused when the page is opened, before any strip is read", async () => {
    const bytes = stripsSharingLzwData(64, 64, 100_000);
    await expect(openImageRegions(bytesSource(bytes))).rejects.toThrow(
      "TIFF corrupt: its compressed strips or tiles claim 7204800 bytes, more than the 113599-byte file holds (blocks that share their bytes)",
    );
    // One such strip is a valid image, read once.
    const one = await openImageRegions(bytesSource(stripsSharingLzwData(64, 1, 100_000)));
    expect(Array.from((await one.readRegion(0, 0, 4, 1)).data)).toEqual([1, 1, 1, 1]);
  });

  it("channel pages whose strips name the same bytes: refused once the pages of a region add up past the file", async () => {
    const image = await openImageRegions(bytesSource(channelPagesSharingLzwData(4, 100_000)));
    expect(image.channels).toBe(4);
    await expect(image.readRegion(0, 0, 64, 1)).rejects.toThrow(/compressed strips or tiles claim \d+ bytes, more than the \d+-byte file holds/);
  });

  it("a tile whose offset lies beyond the file", async () => {
    const bytes = rawTiff(512, 8, [
      {
        at: 8,
        entries: gray(
          [
            [324, 4, 1, 0x7fff_0000],
            [325, 4, 1, 100],
          ],
          64,
        ),
        next: 0,
      },
    ]);
    const image = await openImageRegions(bytesSource(bytes));
    await expect(image.readRegion(0, 0, 4, 4)).rejects.toThrow(/past the end of the file/);
  });

  it("a tile too short to decode to its pixels", async () => {
    const bytes = rawTiff(512, 8, [
      {
        at: 8,
        entries: gray(
          [
            [324, 4, 1, 300],
            [325, 4, 1, 2],
          ],
          64,
        ),
        next: 0,
      },
    ]);
    await expect((await openImageRegions(bytesSource(bytes))).readRegion(0, 0, 4, 4)).rejects.toThrow(/too few to decode/);
  });

  it("a forged 65536² tile, whatever the image's size", async () => {
    const bytes = rawTiff(512, 8, [
      {
        at: 8,
        entries: gray(
          [
            [324, 4, 1, 300],
            [325, 4, 1, 100],
          ],
          65536,
          150_000, // within MAX_REGION_IMAGE_SAMPLES: the tile's own size is what is refused
        ),
        next: 0,
      },
    ]);
    const error = await openImageRegions(bytesSource(bytes)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ImageDecodeError);
    expect(error).toMatchObject({ kind: "too-large", message: expect.stringMatching(/65536x65536 tile decodes to more than/) });
  });

  it("a tag count past the file, or past MAX_TIFF_TAG_VALUES", async () => {
    const big = rawTiff(
      4096,
      16,
      [
        {
          at: 16,
          entries: gray([
            [324, 16, 2n ** 40n, 1024n],
            [325, 16, 1n, 100n],
          ]),
          next: 0,
        },
      ],
      [],
      true,
    );
    await expect(openImageRegions(bytesSource(big))).rejects.toThrow(/tag 324 lies outside the file/);
    const count = MAX_TIFF_TAG_VALUES + 1;
    const many = rawTiff(1024 + 4 * count, 8, [
      {
        at: 8,
        entries: gray([
          [324, 4, count, 1024],
          [325, 4, 1, 100],
        ]),
        next: 0,
      },
    ]);
    await expect(openImageRegions(bytesSource(many))).rejects.toThrow(/1048577 values, more than the 1048576 allowed/);
  });

  it("a directory with 2^40 entries", async () => {
    const bytes = rawTiff(4096, 16, [{ at: 16, entries: [], next: 0, count: 2n ** 40n }], [], true);
    await expect(openImageRegions(bytesSource(bytes))).rejects.toThrow(/1099511627776 entries/);
  });
});

describe("mutated files read by region", () => {
  it("give the whole decode's pixels or an ImageDecodeError, never another error", async () => {
    const seeds = fuzzSeeds();
    const outcomes = { equal: 0, refused: 0 };
    for (let i = 0; i < 400; i++) {
      const seed = seeds[i % seeds.length]!;
      const mutation = mutate(seed.bytes, 91 * 1_000_003 + i);
      const bytes = seed.name.startsWith("PNG") && i % 4 !== 0 ? repairPngChecksums(mutation.bytes, crc32) : mutation.bytes;
      let whole: DecodedImage | undefined;
      try {
        whole = decodeImage(bytes);
      } catch (error) {
        expect(error).toBeInstanceOf(ImageDecodeError);
      }
      try {
        const image = await openImageRegions(bytesSource(bytes));
        const region = await image.readRegion(0, 0, image.width, image.height);
        // The region reader checks less of a PNG than the whole decode (chunks after the last row, the Adler-32).
        if (whole) expect(region.data, `case ${i}: ${mutation.steps.join(", ")}`).toEqual(whole.data);
        outcomes.equal++;
      } catch (error) {
        expect(error, `case ${i} (${seed.name}): ${mutation.steps.join(", ")}`).toBeInstanceOf(ImageDecodeError);
        outcomes.refused++;
      }
    }
    expect(outcomes.equal).toBeGreaterThan(0);
    expect(outcomes.refused).toBeGreaterThan(0);
  });
});

function findChunk(png: Uint8Array, type: string): number {
  const view = new DataView(png.buffer, png.byteOffset, png.byteLength);
  for (let at = 8; at < png.length; at += 12 + view.getUint32(at)) {
    if (String.fromCharCode(...png.subarray(at + 4, at + 8)) === type) return at;
  }
  throw new Error(`no ${type} chunk`);
}
