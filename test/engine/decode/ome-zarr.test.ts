// OME-Zarr stores uploaded as a ZIP (OME-NGFF 0.4 on Zarr v2, 0.5 on Zarr v3): read region by
// region from the chunks a region meets, every sample as written, whatever the codec. The stores
// come from test/fixtures/ome-zarr-writer.ts.
import { describe, expect, it } from "vitest";
import { ImageDecodeError, probeImage } from "../../../common/decode/index.ts";
import { bytesSource, openImageRegions } from "../../../common/decode/region-reader.ts";
import { type Codec, encodeOmeZarrZip, type ZarrSpec } from "../../fixtures/ome-zarr-writer.ts";

const WIDTH = 100;
const HEIGHT = 70;
/** A different value at every sample of every channel, so a misplaced chunk or channel shows. */
const value = (c: number, y: number, x: number) => (c * 7919 + y * 101 + x * 3) % 65536;

function store(overrides: Partial<ZarrSpec> = {}): Promise<Uint8Array> {
  return encodeOmeZarrZip({
    version: 2,
    width: WIDTH,
    height: HEIGHT,
    channels: 2,
    chunk: [32, 32],
    dataType: "uint16",
    codec: "blosc",
    value,
    pixelSizeUm: 0.5,
    ...overrides,
  });
}

/** Every sample of a region read at (x, y) of channels `channels`, against `value`: how many differ. */
function differing(data: Float32Array, x: number, y: number, w: number, h: number, channels: number[], expected = value): number {
  let count = 0;
  channels.forEach((c, k) => {
    for (let row = 0; row < h; row++) for (let col = 0; col < w; col++) if (data[(k * h + row) * w + col] !== expected(c, y + row, x + col)) count++;
  });
  return count;
}

/** A region across six chunks, the right and bottom ones at the array's edge. */
const CROSSING = [20, 10, 80, 60] as const;

describe("a zipped OME-Zarr store", () => {
  it("is probed from its ZIP directory and metadata: the full resolution, its channels, the scale as the pixel size, its levels", async () => {
    expect(probeImage(await store({ levels: 2 }), { regions: true })).toMatchObject({
      format: "zarr",
      formatName: "OME-Zarr (NGFF 0.4)",
      width: WIDTH,
      height: HEIGHT,
      channels: 2,
      bitDepth: 16,
      pages: 1,
      pixelSize: { x: 0.5, y: 0.5, source: "ome-zarr" },
      levels: [
        { width: 50, height: 35 },
        { width: 25, height: 18 },
      ],
    });
  });

  for (const codec of ["blosc", "zstd", "zlib", "gzip", null] as Codec[]) {
    it(`reads ${codec ?? "uncompressed"} chunks region by region, every sample as written`, async () => {
      const regions = await openImageRegions(bytesSource(await store({ codec })));
      expect({ format: regions.format, width: regions.width, height: regions.height, channels: regions.channels }).toEqual({
        format: "zarr",
        width: WIDTH,
        height: HEIGHT,
        channels: 2,
      });
      const region = await regions.readRegion(...CROSSING);
      expect(differing(region.data, ...CROSSING, [0, 1])).toBe(0);
    });
  }

  it("opens a reduced level (a dataset after the first) as an image of its own", async () => {
    const regions = await openImageRegions(bytesSource(await store({ levels: 2 })));
    const level = await regions.readLevel!(1);
    expect({ width: level.width, height: level.height, levels: level.levels }).toEqual({ width: 25, height: 18, levels: [] });
    const region = await level.readRegion(0, 0, 25, 18, { channels: [1] });
    // The writer's level 2 samples every fourth pixel of the full resolution.
    expect(differing(region.data, 0, 0, 25, 18, [1], (c, y, x) => value(c, 4 * y, 4 * x))).toBe(0);
  });

  it("reads Zarr v3 (OME-NGFF 0.5) with t, c, z, y, x axes, and the channel asked for alone", async () => {
    const bytes = await store({ version: 3, codec: "zstd", fiveD: true, dataType: "uint8", value: (c, y, x) => (c * 50 + y + x) % 256 });
    expect(probeImage(bytes, { regions: true })).toMatchObject({ formatName: "OME-Zarr (NGFF 0.5)", channels: 2, bitDepth: 8 });
    const regions = await openImageRegions(bytesSource(bytes));
    const region = await regions.readRegion(...CROSSING, { channels: [1] });
    expect(differing(region.data, ...CROSSING, [1], (c, y, x) => (c * 50 + y + x) % 256)).toBe(0);
  });

  it("reads chunk keys with the / separator, and a chunk the store leaves out as the fill value", async () => {
    const regions = await openImageRegions(bytesSource(await store({ separator: "/", codec: "zlib", leaveOut: ["0/0/0"] })));
    const region = await regions.readRegion(0, 0, 40, 40, { channels: [0] });
    expect(region.data[0]).toBe(0);
    expect(region.data[39 * 40 + 39]).toBe(value(0, 39, 39));
  });

  it("refuses a chunk whose blosc header declares more than its array's chunks hold, before decoding it", async () => {
    const forged = await store({
      forgeChunk: (key, stored) => {
        if (key !== "0.0.0") return stored;
        const copy = stored.slice();
        new DataView(copy.buffer).setUint32(4, 1 << 30, true);
        return copy;
      },
    });
    const regions = await openImageRegions(bytesSource(forged));
    const refusal = regions.readRegion(0, 0, 10, 10);
    await expect(refusal).rejects.toThrow(ImageDecodeError);
    await expect(refusal).rejects.toThrow(/declares 1073741824 decoded bytes where its array's chunks hold 2048/);
  });

  it("names a ZIP that holds neither an OME-Zarr store nor a DICOM series, with what to do", async () => {
    const { zipSync } = await import("fflate");
    expect(() => probeImage(zipSync({ "notes/readme.txt": new Uint8Array(200) }))).toThrow(
      /a ZIP archive holding neither an OME-Zarr store .* nor a DICOM whole-slide series: zip an OME-Zarr store with its metadata/,
    );
    // DICOM files deflated inside the ZIP cannot be read by parts.
    expect(() => probeImage(zipSync({ "series/level-0.dcm": new Uint8Array(200) }))).toThrow(/entries are deflated .*store it \(zip -r -0/);
  });
});
