// The pixel size and channel names of TIFFs as microscopy software writes them (test/reference/tiff,
// written by tifffile through test/reference/calibrated_tiffs.py), read alike by the engine's
// decoder probe and the worker's upload probe (schema/image-formats/calibration.ts); and the sizes
// not trusted: screen and print defaults, and sizes no microscope produces (written by the fixture
// TIFF writer). The one probe (common/decode/probe.ts) is read both ways it runs: on the bytes, as
// the engine does, and through ranged reads by regions, as the worker's upload probe does.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { bytesSource } from "../../common/decode/byte-source.ts";
import { probeImage as probeInEngine, probeImageSource } from "../../common/decode/index.ts";
import { micrometres, tiffCalibration, utf8Description } from "../../schema/image-formats/calibration.ts";
import { Tag } from "../../schema/image-formats/tiff-tags.ts";
import { encodeTiff, type TiffPage } from "../fixtures/tiff-writer.ts";

/** The upload's way in: ranged reads, the image to be read by regions. */
const probeAtUpload = (bytes: Uint8Array) => probeImageSource(bytesSource(bytes), { regions: true });

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
      const upload = await probeAtUpload(bytes);
      close(engine.pixelSize, expected.pixelSize);
      close(upload.pixelSize, expected.pixelSize);
      expect(upload.pixelSizeWarning).toBe(engine.pixelSizeWarning);
      expect(engine.channelNames).toEqual(expected.channelNames);
      expect(upload.channelNames).toEqual(expected.channelNames);
    });
  }

  it("prefers OME-XML to the resolution tags, and ImageJ's unit to the tags' absent one", () => {
    const tags = (x: number, unit?: number) => ({
      numbers: (tag: number) => (tag === Tag.XResolution || tag === Tag.YResolution ? [x] : tag === Tag.ResolutionUnit && unit ? [unit] : undefined),
      count: () => 1,
    });
    const size = (description: string | undefined, x: number, unit?: number) => tiffCalibration(description, tags(x, unit)).pixelSize;
    const ome = '<OME><Image><Pixels SizeX="4" PhysicalSizeX="0.0015" PhysicalSizeXUnit="mm"></Pixels></Image></OME>';
    close(size(ome, 10, 3), { x: 1.5, y: 1.5, source: "ome" });
    // OME-XML without a size falls back to the tags.
    expect(size("<OME><Image><Pixels SizeX='4'/></Image></OME>", 1e4, 3)).toEqual({ x: 1, y: 1, source: "tiff" });
    close(size("ImageJ=1.54f\nunit=nm\n", 0.01), { x: 0.1, y: 0.1, source: "imagej" }); // 100 nm
    expect(size("ImageJ=1.54f\nunit=pixel\n", 1)).toBeNull();
    expect(size("ImageJ=1.54f\nunit=\\u00B5m\n", 4)).toEqual({ x: 0.25, y: 0.25, source: "imagej" });
    // No ResolutionUnit: no unit, as ImageJ reads it (the TIFF specification would say inch).
    expect(tiffCalibration(undefined, tags(300))).toEqual({ pixelSize: null, warning: null });
    expect(tiffCalibration(undefined, tags(0, 3))).toEqual({ pixelSize: null, warning: null });
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

/** A 4 x 4 grey TIFF with these resolution tags and description. */
const written = (resolution: TiffPage["resolution"], description?: string) =>
  encodeTiff([{ width: 4, height: 4, samplesPerPixel: 1, kind: "uint8", values: new Uint8Array(16), resolution, description }]);

/** The engine's and the upload's reading of a file, which must agree. */
async function calibrationOf(bytes: Uint8Array) {
  const engine = probeInEngine(bytes);
  const upload = await probeAtUpload(bytes);
  expect({ pixelSize: upload.pixelSize, warning: upload.pixelSizeWarning }).toEqual({ pixelSize: engine.pixelSize, warning: engine.pixelSizeWarning });
  return { pixelSize: engine.pixelSize, warning: engine.pixelSizeWarning };
}

describe("a pixel size is trusted only where a microscope could have made it", () => {
  // Screen and print defaults as programs write them: per inch, and per centimetre as rounded by
  // libtiff, Pillow and Photoshop (96 / 2.54 = 37.7953).
  const defaults: [string, NonNullable<TiffPage["resolution"]>, number][] = [
    ["72 dpi", { x: 72, unit: 2 }, 72],
    ["96 dpi (Kromp et al.'s TIFFs)", { x: 96, unit: 2 }, 96],
    ["150 dpi", { x: 150, unit: 2 }, 150],
    ["300 dpi", { x: 300, unit: 2 }, 300],
    ["28.3465 px/cm", { x: 28.3465, unit: 3 }, 72],
    ["37.7953 px/cm", { x: 37.7953, unit: 3 }, 96],
    ["37.795276 px/cm", { x: 37.795276, unit: 3 }, 96],
    ["59.0551 px/cm", { x: 59.0551, unit: 3 }, 150],
    ["118.11 px/cm", { x: 118.11, unit: 3 }, 300],
  ];
  for (const [name, resolution, dpi] of defaults) {
    it(`${name} without ImageJ or OME metadata: no pixel size, and a warning naming the default`, async () => {
      expect(await calibrationOf(written(resolution))).toEqual({
        pixelSize: null,
        warning: `The file's resolution, ${dpi} dpi, is a screen or print default, not a microscope's calibration`,
      });
    });
  }

  it("reads an Aperio SVS's MPP from its description, over the resolution tags Aperio leaves at a default", async () => {
    // The description as Aperio's ImageScope writes it (the 20x CMU-1 slide's, shortened).
    const aperio =
      "Aperio Image Library v10.0.51\r\n46920x33014 [0,100 46000x32914] (256x256) JPEG/RGB Q=30|AppMag = 20|StripeWidth = 2040|ScanScope ID = CPAPERIOCS|MPP = 0.4990|Left = 25.691574|Top = 23.449873";
    expect(await calibrationOf(written({ x: 72, unit: 2 }, aperio))).toEqual({ pixelSize: { x: 0.499, y: 0.499, source: "aperio" }, warning: null });
    // Its last field, and no resolution tags at all.
    expect((await calibrationOf(written(undefined, "Aperio Image Library v11.2.1\r\n1000x800 JPEG/RGB Q=70|AppMag = 40|MPP = 0.2527"))).pixelSize).toEqual({
      x: 0.2527,
      y: 0.2527,
      source: "aperio",
    });
    // No MPP, or one that is no size: nothing from the description.
    expect((await calibrationOf(written(undefined, "Aperio Image Library v10.0.51\r\n1000x800 JPEG/RGB|AppMag = 20"))).pixelSize).toBeNull();
    expect((await calibrationOf(written(undefined, "Aperio Image Library|MPP = -1|"))).pixelSize).toBeNull();
    // A size no microscope produces is set aside with the warning, as any other source's.
    expect((await calibrationOf(written(undefined, "Aperio Image Library|MPP = 400|"))).warning).toBe(
      "The file's pixel size, 400 µm (the Aperio description's MPP), is outside the 0.01-50 µm that microscopes produce",
    );
  });

  it("keeps ImageJ's calibration, whatever its number, and a resolution no program writes by default", async () => {
    // 96 pixels per µm is 0.0104 µm: ImageJ calibrated it, no default.
    const imagej = await calibrationOf(written({ x: 96, unit: 1 }, "ImageJ=1.54f\nunit=micron\n"));
    expect(imagej.warning).toBeNull();
    close(imagej.pixelSize, { x: 1 / 96, y: 1 / 96, source: "imagej" });
    expect((await calibrationOf(written({ x: 4, unit: 1 }, "ImageJ=1.54f\nunit=micron\n"))).pixelSize).toEqual({ x: 0.25, y: 0.25, source: "imagej" });
    // 4000 pixels per cm (2.5 µm), and 25,400 per inch (1 µm): a scanner's calibration.
    expect(await calibrationOf(written({ x: 4000, unit: 3 }))).toEqual({ pixelSize: { x: 2.5, y: 2.5, source: "tiff" }, warning: null });
    close((await calibrationOf(written({ x: 25_400, unit: 2 }))).pixelSize, { x: 1, y: 1, source: "tiff" });
    // An ImageJ description with no unit leaves the tags to say it: a default is still a default.
    expect((await calibrationOf(written({ x: 96, unit: 2 }, "ImageJ=1.54f\nimages=1\n"))).pixelSize).toBeNull();
  });

  it("sets aside a size outside 0.01-50 µm with a warning, wherever the file says it", async () => {
    const tiny = await calibrationOf(written({ x: 10_000, unit: 1 }, "ImageJ=1.54f\nunit=micron\n")); // 1e-4 µm
    expect(tiny).toEqual({
      pixelSize: null,
      warning: "The file's pixel size, 0.0001 µm (ImageJ's calibration), is outside the 0.01-50 µm that microscopes produce",
    });
    const ome = '<?xml version="1.0"?><OME><Image><Pixels SizeX="4" SizeY="4" PhysicalSizeX="500" PhysicalSizeY="500"></Pixels></Image></OME>';
    expect(await calibrationOf(written(undefined, ome))).toEqual({
      pixelSize: null,
      warning: "The file's pixel size, 500 µm (OME-XML), is outside the 0.01-50 µm that microscopes produce",
    });
    expect((await calibrationOf(written({ x: 20, y: 40, unit: 3 }))).warning).toBe(
      "The file's pixel size, 500 × 250 µm (the TIFF resolution tags), is outside the 0.01-50 µm that microscopes produce",
    );
    // The bounds themselves are sizes microscopes produce.
    expect((await calibrationOf(written({ x: 100, unit: 1 }, "ImageJ=1.54f\nunit=micron\n"))).pixelSize?.x).toBeCloseTo(0.01, 12);
    expect((await calibrationOf(written({ x: 200, unit: 3 }))).pixelSize).toEqual({ x: 50, y: 50, source: "tiff" });
  });
});
