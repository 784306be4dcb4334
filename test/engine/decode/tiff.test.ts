import { fromArrayBuffer } from "geotiff";
import { describe, expect, it } from "vitest";
import { decodeImage, ImageDecodeError, probeImage } from "../../../common/decode/index.ts";
import { encodeTiff, type Compression, type SampleKind, type TiffPage } from "../../fixtures/tiff-writer.ts";

/** Deterministic test pattern spanning the sample type's range. */
function pattern(width: number, height: number, spp: number, kind: SampleKind): number[] {
  const values: number[] = [];
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      for (let s = 0; s < spp; s++) {
        const v = (x * 37 + y * 101 + s * 53) % 251;
        values.push(
          kind === "uint8"
            ? v
            : kind === "uint16"
              ? v * 257 + (x % 3)
              : kind === "uint32"
                ? v * 16_777_259 + x
                : kind === "int16"
                  ? (v - 125) * 200
                  : (v - 125) / 7 + 0.125,
        );
      }
    }
  }
  return values;
}

/** The planar [C, H, W] layout decodeImage promises, from interleaved test values. */
function planar(values: number[], width: number, height: number, spp: number): Float32Array {
  const out = new Float32Array(values.length);
  for (let i = 0; i < width * height; i++) for (let s = 0; s < spp; s++) out[s * width * height + i] = values[i * spp + s]!;
  return out;
}

async function geotiffBands(bytes: Uint8Array): Promise<number[][]> {
  const tiff = await fromArrayBuffer(bytes.slice().buffer);
  const rasters = await (await tiff.getImage()).readRasters();
  return Array.from(rasters as ArrayLike<ArrayLike<number>>, (band) => Array.from(band));
}

describe("TIFF decoding", () => {
  const width = 37;
  const height = 23;
  const compressions: Compression[] = ["none", "lzw", "deflate", "packbits"];
  const kinds: SampleKind[] = ["uint8", "uint16", "uint32", "int16", "float32", "float64"];

  for (const compression of compressions) {
    for (const kind of kinds) {
      it(`reads ${kind} samples, ${compression}, in strips, exactly as written and as geotiff reads them`, async () => {
        const values = pattern(width, height, 1, kind);
        const bytes = encodeTiff([{ width, height, samplesPerPixel: 1, values, kind, compression, rowsPerStrip: 5 }]);
        const image = decodeImage(bytes);
        expect(image).toMatchObject({ width, height, channels: 1, bitDepth: { uint8: 8, uint16: 16, uint32: 32, int16: 16, float32: 32, float64: 64 }[kind] });
        expect(image.sampleFormat).toBe(kind.startsWith("float") ? "float" : kind.startsWith("int") ? "int" : "uint");
        expect(image.data).toEqual(planar(values, width, height, 1));
        expect(Array.from(image.data)).toEqual((await geotiffBands(bytes))[0]!.map(Math.fround));
      });
    }
  }

  it("reads tiled, multi-channel chunky and planar images with every compression", async () => {
    for (const compression of compressions) {
      for (const isPlanar of [false, true]) {
        const values = pattern(width, height, 3, "uint16");
        const page: TiffPage = { width, height, samplesPerPixel: 3, values, kind: "uint16", compression, planar: isPlanar, tile: { width: 16, height: 16 } };
        const bytes = encodeTiff([page]);
        const image = decodeImage(bytes);
        expect(image.channels).toBe(3);
        expect(image.data).toEqual(planar(values, width, height, 3));
        expect((await geotiffBands(bytes)).flat()).toEqual(Array.from(image.data));
      }
    }
  });

  it("reads LZW strips long enough to fill the code table and restart it", async () => {
    const w = 300,
      h = 200;
    let seed = 7;
    const values = Array.from({ length: w * h }, () => (seed = (seed * 1_103_515_245 + 12_345) >>> 0) >>> 20);
    const bytes = encodeTiff([{ width: w, height: h, samplesPerPixel: 1, values, kind: "uint16", compression: "lzw" }]);
    const image = decodeImage(bytes);
    expect(image.data).toEqual(Float32Array.from(values));
    expect(Array.from(image.data)).toEqual((await geotiffBands(bytes))[0]);
  });

  it("undoes the horizontal predictor for 8, 16 and 32-bit samples", () => {
    for (const kind of ["uint8", "uint16", "uint32"] as const) {
      const values = pattern(width, height, 2, kind);
      const bytes = encodeTiff([{ width, height, samplesPerPixel: 2, values, kind, compression: "lzw", predictor: 2, rowsPerStrip: 4 }]);
      expect(decodeImage(bytes).data).toEqual(planar(values, width, height, 2));
    }
  });

  it("reads big-endian files and BigTIFF", () => {
    const values = pattern(width, height, 1, "uint16");
    const page: TiffPage = { width, height, samplesPerPixel: 1, values, kind: "uint16", compression: "deflate" };
    const expected = planar(values, width, height, 1);
    expect(decodeImage(encodeTiff([page], { bigEndian: true })).data).toEqual(expected);
    expect(decodeImage(encodeTiff([page], { bigTiff: true })).data).toEqual(expected);
    expect(decodeImage(encodeTiff([page], { bigTiff: true, bigEndian: true })).data).toEqual(expected);
  });

  it("selects channels explicitly, in the order asked", () => {
    const values = pattern(width, height, 3, "uint8");
    const bytes = encodeTiff([{ width, height, samplesPerPixel: 3, values, kind: "uint8" }]);
    const all = planar(values, width, height, 3);
    const plane = width * height;
    const picked = decodeImage(bytes, { channels: [2, 0] });
    expect(picked.channels).toBe(2);
    expect(picked.data.subarray(0, plane)).toEqual(all.subarray(2 * plane, 3 * plane));
    expect(picked.data.subarray(plane)).toEqual(all.subarray(0, plane));
    expect(() => decodeImage(bytes, { channels: [3] })).toThrow(/channel 3 does not exist/);
  });

  it("treats each page of a plain multi-page TIFF as a plane", () => {
    const pages = [0, 1, 2].map((k): TiffPage => ({ width, height, samplesPerPixel: 1, kind: "uint8", values: new Array(width * height).fill(10 + k) }));
    const bytes = encodeTiff(pages);
    expect(probeImage(bytes)).toMatchObject({ format: "tiff", pages: 3, channels: 1 });
    expect(decodeImage(bytes, { page: 2 }).data[0]).toBe(12);
    expect(() => decodeImage(bytes, { page: 3 })).toThrow(/page 3 does not exist/);
  });

  it("reads OME-TIFF channels from their pages following DimensionOrder", () => {
    // SizeC = 2, SizeZ = 3, XYZCT: z varies fastest, so channel c of plane z is page c * 3 + z.
    const ome = `<?xml version="1.0"?><OME xmlns="http://www.openmicroscopy.org/Schemas/OME/2016-06"><Image ID="Image:0"><Pixels ID="Pixels:0" DimensionOrder="XYZCT" Type="uint16" SizeX="${width}" SizeY="${height}" SizeC="2" SizeZ="3" SizeT="1"><Channel ID="Channel:0:0" SamplesPerPixel="1"/><Channel ID="Channel:0:1" SamplesPerPixel="1"/></Pixels></Image></OME>`;
    const pages = [0, 1, 2, 3, 4, 5].map(
      (k): TiffPage => ({
        width,
        height,
        samplesPerPixel: 1,
        kind: "uint16",
        values: new Array(width * height).fill(100 + k),
        ...(k === 0 ? { description: ome } : {}),
      }),
    );
    const bytes = encodeTiff(pages);
    expect(probeImage(bytes)).toMatchObject({ channels: 2, pages: 3 });
    const plane1 = decodeImage(bytes, { page: 1 });
    expect(plane1.channels).toBe(2);
    expect([plane1.data[0], plane1.data[width * height]]).toEqual([101, 104]);
    expect(decodeImage(bytes, { page: 2, channels: [1] }).data[0]).toBe(105);
  });

  it("reads ImageJ hyperstacks with the channel varying fastest", () => {
    const description = "ImageJ=1.54f\nimages=4\nchannels=2\nslices=2\nhyperstack=true\n";
    const pages = [0, 1, 2, 3].map(
      (k): TiffPage => ({ width, height, samplesPerPixel: 1, kind: "uint8", values: new Array(width * height).fill(k), ...(k === 0 ? { description } : {}) }),
    );
    const image = decodeImage(encodeTiff(pages), { page: 1 });
    expect(image.channels).toBe(2);
    expect([image.data[0], image.data[width * height]]).toEqual([2, 3]);
  });
});

describe("TIFF errors", () => {
  const width = 40;
  const height = 30;
  const values = pattern(width, height, 1, "uint16");

  it("reports a truncated file instead of reading past its end", () => {
    for (const compression of ["none", "lzw", "deflate", "packbits"] as const) {
      const bytes = encodeTiff([{ width, height, samplesPerPixel: 1, values, kind: "uint16", compression }]);
      // The writer puts image data before the directory, so cutting keeps the header and drops the IFD.
      for (const cut of [4, 10, Math.floor(bytes.length / 2), bytes.length - 3]) {
        expect(() => decodeImage(bytes.subarray(0, cut)), `${compression} cut at ${cut}`).toThrow(ImageDecodeError);
      }
    }
  });

  it("reports corrupt compressed data", () => {
    const bytes = encodeTiff([{ width, height, samplesPerPixel: 1, values, kind: "uint16", compression: "deflate" }]);
    const corrupt = bytes.slice();
    corrupt.fill(0xff, 8, 40); // the first compressed strip starts at byte 8
    expect(() => decodeImage(corrupt)).toThrow(/Deflate/);
  });

  it("rejects a header that declares an image too large to hold, before allocating it", () => {
    const bytes = encodeTiff([{ width: 2, height: 2, samplesPerPixel: 1, values: [1, 2, 3, 4], kind: "uint8" }]);
    const view = new DataView(bytes.buffer);
    const ifd = view.getUint32(4, true);
    for (let i = 0; i < view.getUint16(ifd, true); i++) {
      const entry = ifd + 2 + 12 * i;
      if (view.getUint16(entry, true) === 256 || view.getUint16(entry, true) === 257) view.setUint32(entry + 8, 1_000_000, true);
    }
    expect(() => decodeImage(bytes)).toThrow(/too large/);
  });

  it("reports a directory chain that loops", () => {
    const bytes = encodeTiff([{ width: 2, height: 2, samplesPerPixel: 1, values: [1, 2, 3, 4], kind: "uint8" }]);
    const view = new DataView(bytes.buffer);
    const ifd = view.getUint32(4, true);
    view.setUint32(ifd + 2 + 12 * view.getUint16(ifd, true), ifd, true);
    expect(() => decodeImage(bytes)).toThrow(/loops/);
  });

  it("names unsupported compressions in words, with their codes", () => {
    const withCompression = (code: number) => {
      const bytes = encodeTiff([{ width: 2, height: 2, samplesPerPixel: 1, values: [1, 2, 3, 4], kind: "uint8" }]);
      const view = new DataView(bytes.buffer);
      const ifd = view.getUint32(4, true);
      for (let i = 0; i < view.getUint16(ifd, true); i++) {
        const entry = ifd + 2 + 12 * i;
        if (view.getUint16(entry, true) === 259) view.setUint16(entry + 8, code, true);
      }
      return bytes;
    };
    expect(() => decodeImage(withCompression(34887))).toThrow(
      "TIFF compression LERC, code 34887, is not supported (supported: none, LZW, Deflate, PackBits, JPEG, JPEG 2000)",
    );
    expect(() => decodeImage(withCompression(50002))).toThrow("TIFF compression JPEG XL, code 50002, is not supported");
    // A code no one names: the number alone.
    expect(() => decodeImage(withCompression(40000))).toThrow(
      "TIFF compression 40000 is not supported (supported: none, LZW, Deflate, PackBits, JPEG, JPEG 2000)",
    );
  });
});
