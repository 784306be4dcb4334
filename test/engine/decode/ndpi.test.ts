// Hamamatsu NDPI: a TIFF of its own kind, whose large levels are single JPEGs read by their restart
// intervals, whose macro image is never the image, and whose offsets past 4 GiB keep their high
// halves after each directory. The fixtures are written as the scanners lay them out
// (test/fixtures/ndpi-writer.ts); the pixels expected are each interval's own decode.
import { open } from "node:fs/promises";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { decodeImage, probeImage } from "../../../common/decode/index.ts";
import { fileSource } from "../../../common/decode/byte-source.ts";
import { bytesSource, openImageRegions } from "../../../common/decode/region-reader.ts";
import { encodeNdpi, encodeNdpiParts, type NdpiPageSpec, ndpiStrip } from "../../fixtures/ndpi-writer.ts";

/** Stain-like RGB that varies along both axes, so a misplaced tile shows. */
function tissue(width: number, height: number): Uint8Array {
  const values = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      values.set([120 + ((x * 7 + y * 3) % 120), 40 + ((x * 5 + y * 11) % 100), 110 + ((x + y * 13) % 110)], (y * width + x) * 3);
    }
  }
  return values;
}

const flat = (width: number, height: number, value: number) => new Uint8Array(width * height * 3).fill(value);

/** A 20x scan: its full resolution restarting every 4 MCUs (317 x 43: the last MCU column and row are partial), a 5x level, the macro and the map. */
function scan(extra: Partial<NdpiPageSpec> = {}): NdpiPageSpec[] {
  return [
    { width: 317, height: 43, rgb: tissue(317, 43), interval: 4, sourceLens: 20, resolution: 22_075, ...extra },
    { width: 79, height: 51, rgb: tissue(79, 51), sourceLens: 5, resolution: 5_519 },
    { width: 120, height: 40, rgb: flat(120, 40, 230), sourceLens: -1 },
    { width: 60, height: 20, rgb: flat(60, 20, 20), sourceLens: -2 },
  ];
}

/** Planar channel `c` of `rect` cut from interleaved RGB. */
function cut(rgb: Uint8Array, width: number, rect: { x: number; y: number; w: number; h: number }): Float32Array {
  const out = new Float32Array(3 * rect.w * rect.h);
  for (let c = 0; c < 3; c++) {
    for (let y = 0; y < rect.h; y++) {
      for (let x = 0; x < rect.w; x++) out[c * rect.w * rect.h + y * rect.w + x] = rgb[((rect.y + y) * width + rect.x + x) * 3 + c]!;
    }
  }
  return out;
}

describe("a Hamamatsu NDPI", () => {
  const pages = scan();
  const bytes = encodeNdpi(pages);
  const expected = ndpiStrip(pages[0]!).pixels;
  const whole = { x: 0, y: 0, w: 317, h: 43 };

  it("is probed as the slide it is: its full resolution, its levels, the pixel size from its resolution tags, the objective", () => {
    const probe = probeImage(bytes);
    expect(probe).toMatchObject({
      format: "tiff",
      formatName: "Hamamatsu NDPI",
      width: 317,
      height: 43,
      channels: 3,
      pages: 1,
      levels: [{ width: 79, height: 51 }],
      objectiveMagnification: 20,
    });
    expect(probe.pixelSize?.x).toBeCloseTo(10_000 / 22_075, 6);
  });

  it("reads any region of the restart-marked level as each interval decodes, never the macro", async () => {
    const regions = await openImageRegions(bytesSource(bytes));
    expect({ width: regions.width, height: regions.height, channels: regions.channels }).toEqual({ width: 317, height: 43, channels: 3 });
    for (const rect of [whole, { x: 29, y: 5, w: 70, h: 19 }, { x: 250, y: 30, w: 67, h: 13 }]) {
      const region = await regions.readRegion(rect.x, rect.y, rect.w, rect.h);
      expect(region.data).toEqual(cut(expected, 317, rect));
    }
  });

  it("decodes whole to the same pixels", () => {
    expect(decodeImage(bytes).data).toEqual(cut(expected, 317, whole));
  });

  it("opens its 5x level, a plain JPEG strip, through readLevel", async () => {
    const regions = await openImageRegions(bytesSource(bytes));
    const level = await regions.readLevel!(0);
    expect({ width: level.width, height: level.height }).toEqual({ width: 79, height: 51 });
    const region = await level.readRegion(0, 0, 79, 51);
    expect(region.data).toEqual(cut(ndpiStrip(pages[1]!).pixels, 79, { x: 0, y: 0, w: 79, h: 51 }));
  });

  it("decodes its JPEG as the YCbCr it is, whatever its photometric tag says", async () => {
    const regions = await openImageRegions(bytesSource(encodeNdpi(scan({ photometric: 2 }))));
    expect((await regions.readRegion(0, 0, 317, 43)).data).toEqual(cut(expected, 317, whole));
  });

  it("reads the focal plane in focus of a z-stack", async () => {
    const [full, ...rest] = scan();
    const above = { ...full!, rgb: flat(317, 43, 40), zOffset: 1200 };
    const regions = await openImageRegions(bytesSource(encodeNdpi([above, full!, ...rest])));
    expect((await regions.readRegion(0, 0, 317, 43)).data).toEqual(cut(expected, 317, whole));
  });

  it("reads a file past 4 GiB, its offsets' high halves stored after each directory", async () => {
    const { parts } = encodeNdpiParts(pages, { gap: 5 * 2 ** 30 });
    const path = join(await mkdtemp(join(tmpdir(), "ndpi-")), "sparse.ndpi");
    const handle = await open(path, "w");
    for (const part of parts) await handle.write(part.bytes, 0, part.bytes.length, part.at);
    await handle.close();
    const file = await fileSource(path);
    try {
      expect(file.size).toBeGreaterThan(5 * 2 ** 30);
      const regions = await openImageRegions(file);
      expect(regions.levels).toEqual([{ width: 79, height: 51 }]);
      expect((await regions.readRegion(100, 10, 90, 30)).data).toEqual(cut(expected, 317, { x: 100, y: 10, w: 90, h: 30 }));
    } finally {
      await file.close();
    }
  });

  describe("refuses, before decoding, an NDPI", () => {
    /** The fixture with the first page's McuStarts changed by `edit`. */
    function withStarts(edit: (starts: DataView, count: number) => void): Uint8Array {
      const copy = bytes.slice();
      const view = new DataView(copy.buffer);
      const directory = Number(view.getBigUint64(4, true));
      const entries = view.getUint16(directory, true);
      for (let i = 0; i < entries; i++) {
        const entry = directory + 2 + 12 * i;
        if (view.getUint16(entry, true) === 65426) edit(new DataView(copy.buffer, view.getUint32(entry + 8, true)), view.getUint32(entry + 4, true));
      }
      return copy;
    }

    it("whose restart intervals are listed out of order", () => {
      const file = withStarts((starts) => starts.setUint32(8, starts.getUint32(4, true) - 1, true));
      expect(() => probeImage(file)).toThrow(/NDPI image corrupt: restart interval 2 starts at .* out of order/);
    });

    it("that lists fewer intervals than its JPEG holds", () => {
      const copy = withStarts(() => {});
      const view = new DataView(copy.buffer);
      const directory = Number(view.getBigUint64(4, true));
      for (let i = 0; i < view.getUint16(directory, true); i++) {
        const entry = directory + 2 + 12 * i;
        if (view.getUint16(entry, true) === 65426) view.setUint32(entry + 4, 10, true);
      }
      expect(() => probeImage(copy)).toThrow(/NDPI image: 10 restart intervals listed, 60 needed/);
    });

    it("whose intervals would decode one tiny tile each behind a large header", () => {
      const tiny = encodeNdpi([{ ...scan()[0]!, width: 24, height: 16, rgb: tissue(24, 16), interval: 1 }]);
      expect(() => probeImage(tiny)).toThrow(/JPEG header before each 24x8 tile is more than 2 bytes per pixel/);
    });
  });
});
