// The pixel size and channel names of TIFFs as microscopy software writes them (test/reference/tiff,
// written by tifffile through test/reference/calibrated_tiffs.py), read alike by the engine's
// decoder probe and the worker's upload probe (schema/image-formats/calibration.ts).
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { probeImage as probeInEngine } from "../../common/decode/index.ts";
import { micrometres, tiffPixelSize, utf8Description } from "../../schema/image-formats/calibration.ts";
import { Tag } from "../../schema/image-formats/tiff-tags.ts";
import { memoryByteSource } from "../../worker/services/byte-source.ts";
import { probeImage as probeAtUpload } from "../../worker/services/image-probe.ts";

const file = (name: string) => new Uint8Array(readFileSync(new URL(`../reference/tiff/${name}`, import.meta.url)));

const EXPECTED: Record<string, { pixelSize: { x: number; y: number; source: string } | null; channelNames: string[] | null }> = {
  "ome-325nm-2ch.ome.tif": { pixelSize: { x: 0.325, y: 0.325, source: "ome" }, channelNames: ["DAPI", "Alexa 488 (GFP)"] },
  "ome-nm-oblong.ome.tif": { pixelSize: { x: 0.65, y: 1.3, source: "ome" }, channelNames: null },
  "imagej-0.5um.tif": { pixelSize: { x: 0.5, y: 0.5, source: "imagej" }, channelNames: null },
  "imagej-micron.tif": { pixelSize: { x: 0.25, y: 0.25, source: "imagej" }, channelNames: null },
  "plain-cm.tif": { pixelSize: { x: 0.8, y: 0.8, source: "tiff" }, channelNames: null },
  "plain-inch.tif": { pixelSize: { x: 2, y: 2, source: "tiff" }, channelNames: null },
  "plain-72dpi.tif": { pixelSize: null, channelNames: null },
  "plain-none.tif": { pixelSize: null, channelNames: null },
};

/** Equal up to the rounding of a rational resolution tag (1/0.8 cm is stored as 12500/1, so exact; 1/0.325 is not). */
function close(actual: { x: number; y: number; source: string } | null, expected: { x: number; y: number; source: string } | null) {
  if (expected === null) return expect(actual).toBeNull();
  expect(actual).not.toBeNull();
  expect(actual!.source).toBe(expected.source);
  expect(actual!.x).toBeCloseTo(expected.x, 12);
  expect(actual!.y).toBeCloseTo(expected.y, 12);
}

describe("the pixel size and channel names of a TIFF", () => {
  for (const [name, expected] of Object.entries(EXPECTED)) {
    it(`${name}: ${expected.pixelSize ? `${expected.pixelSize.x} x ${expected.pixelSize.y} µm from ${expected.pixelSize.source}` : "none"}, the same at upload and in the engine`, async () => {
      const bytes = file(name);
      const engine = probeInEngine(bytes);
      const upload = await probeAtUpload(memoryByteSource(bytes));
      close(engine.pixelSize, expected.pixelSize);
      close(upload.pixelSize, expected.pixelSize);
      expect(engine.channelNames).toEqual(expected.channelNames);
      expect(upload.channelNames).toEqual(expected.channelNames);
    });
  }

  it("prefers OME-XML to the resolution tags, and ImageJ's unit to the tags' absent one", () => {
    const tags = (x: number, unit?: number) => ({
      numbers: (tag: number) => (tag === Tag.XResolution || tag === Tag.YResolution ? [x] : tag === Tag.ResolutionUnit && unit ? [unit] : undefined),
      count: () => 1,
    });
    const ome = '<OME><Image><Pixels SizeX="4" PhysicalSizeX="1.5" PhysicalSizeXUnit="mm"></Pixels></Image></OME>';
    expect(tiffPixelSize(ome, tags(10, 3))).toEqual({ x: 1500, y: 1500, source: "ome" });
    // OME-XML without a size falls back to the tags.
    expect(tiffPixelSize("<OME><Image><Pixels SizeX='4'/></Image></OME>", tags(1e4, 3))).toEqual({ x: 1, y: 1, source: "tiff" });
    close(tiffPixelSize("ImageJ=1.54f\nunit=nm\n", tags(0.01)), { x: 0.1, y: 0.1, source: "imagej" }); // 100 nm
    expect(tiffPixelSize("ImageJ=1.54f\nunit=pixel\n", tags(1))).toBeNull();
    expect(tiffPixelSize("ImageJ=1.54f\nunit=\\u00B5m\n", tags(4))).toEqual({ x: 0.25, y: 0.25, source: "imagej" });
    // No ResolutionUnit: no unit, as ImageJ reads it (the TIFF specification would say inch).
    expect(tiffPixelSize(undefined, tags(300))).toBeNull();
    expect(tiffPixelSize(undefined, tags(0, 3))).toBeNull();
  });

  it("reads units in every spelling, and refuses what is no length", () => {
    for (const unit of ["µm", "\u03bcm", "um", "micron", "microns", "\\u00B5m", " µm "]) expect(micrometres(2, unit)).toBe(2);
    expect(micrometres(500, "nm")).toBe(0.5);
    expect(micrometres(1, "mm")).toBe(1000);
    expect(micrometres(1, "Å")).toBeCloseTo(1e-4, 15);
    expect(micrometres(1, "in")).toBe(25_400);
    for (const [value, unit] of [
      [1, "pixel"],
      [1, "furlong"],
      [0, "µm"],
      [-1, "µm"],
      [Number.NaN, "µm"],
      [Number.POSITIVE_INFINITY, "nm"],
    ] as const)
      expect(micrometres(value, unit)).toBeNull();
  });

  it("gives back UTF-8 text that the TIFF reader decoded as windows-1252", () => {
    const utf8 = new TextEncoder().encode('Name="Zellkern – µ 細胞 €"');
    expect(utf8Description(new TextDecoder("latin1").decode(utf8))).toBe('Name="Zellkern – µ 細胞 €"');
    // Text that was never UTF-8 stays as it came.
    expect(utf8Description("caf\u00e9 \u00b5m")).toBe("caf\u00e9 \u00b5m");
  });
});
