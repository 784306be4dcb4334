// Whole slides in TIFF as Philips, Leica and Ventana write them: each keeps its full resolution on
// a page its own metadata names, beside a macro, label or thumbnail that must never be read as the
// image. The fixtures follow each vendor's layout as OpenSlide's and tifffile's readers describe it.
import { describe, expect, it } from "vitest";
import { decodeImage, probeImage } from "../../../common/decode/index.ts";
import { bytesSource, openImageRegions } from "../../../common/decode/region-reader.ts";
import { encodeTiff, type TiffPage } from "../../fixtures/tiff-writer.ts";

/** Stain-like RGB that varies along both axes, so a wrong page or a misplaced tile shows. */
function tissue(width: number, height: number): Uint8Array {
  const values = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 3;
      values.set([120 + ((x * 7 + y * 3) % 120), 40 + ((x * 5 + y * 11) % 100), 110 + ((x + y * 13) % 110)], i);
    }
  }
  return values;
}

/** An image that is one flat colour: a macro, label or thumbnail, told apart from the tissue by it. */
const flat = (width: number, height: number, value: number) => new Uint8Array(width * height * 3).fill(value);

const rgb = (width: number, height: number, values: Uint8Array, extra: Partial<TiffPage> = {}): TiffPage => ({
  width,
  height,
  samplesPerPixel: 3,
  kind: "uint8",
  values,
  compression: "lzw",
  ...extra,
});

const tiled = { tile: { width: 64, height: 64 } };

/** The full resolution read through the region reader matches the tissue, not the associated images. */
async function expectTissue(bytes: Uint8Array, width: number, height: number): Promise<void> {
  const regions = await openImageRegions(bytesSource(bytes));
  expect({ width: regions.width, height: regions.height, pages: regions.pages }).toEqual({ width, height, pages: 1 });
  const region = await regions.readRegion(70, 30, 40, 50);
  const written = tissue(width, height);
  for (const [x, y] of [
    [70, 30],
    [109, 79],
  ] as const) {
    expect(region.data[(y - 30) * 40 + (x - 70)]).toBe(written[(y * width + x) * 3]);
  }
  expect(decodeImage(bytes).width).toBe(width);
}

describe("a Philips TIFF", () => {
  const xml = `<?xml version="1.0" encoding="UTF-8" ?><DataObject ObjectType="DPUfsImport"><Attribute Name="DICOM_MANUFACTURER" Group="0x0008" Element="0x0070" PMSVR="IString">PHILIPS</Attribute><Attribute Name="PIM_DP_SCANNED_IMAGES" Group="0x301D" Element="0x1003" PMSVR="IDataObjectArray"><Array><DataObject ObjectType="DPScannedImage"><Attribute Name="DICOM_PIXEL_SPACING" Group="0x0028" Element="0x0030" PMSVR="IDoubleArray">&quot;0.000227&quot; &quot;0.000227&quot;</Attribute><Attribute Name="PIM_DP_IMAGE_TYPE" Group="0x301D" Element="0x1004" PMSVR="IString">WSI</Attribute><Attribute Name="PIIM_PIXEL_DATA_REPRESENTATION_SEQUENCE" Group="0x1001" Element="0x8B01" PMSVR="IDataObjectArray"><Array><DataObject ObjectType="PixelDataRepresentation"><Attribute Name="DICOM_PIXEL_SPACING" Group="0x0028" Element="0x0030" PMSVR="IDoubleArray">&quot;0.000227&quot; &quot;0.000227&quot;</Attribute></DataObject><DataObject ObjectType="PixelDataRepresentation"><Attribute Name="DICOM_PIXEL_SPACING" Group="0x0028" Element="0x0030" PMSVR="IDoubleArray">&quot;0.000454&quot; &quot;0.000454&quot;</Attribute></DataObject></Array></Attribute></DataObject></Array></Attribute></DataObject>`;
  // Philips writes the spacing with &quot; escapes; its readers see quotes. Both spellings are read.
  const unescaped = xml.replaceAll("&quot;", '"');
  const slide = (description: string) =>
    encodeTiff([
      rgb(256, 192, tissue(256, 192), { ...tiled, description, software: "Philips DP v1.0" }),
      rgb(128, 96, flat(128, 96, 90), { ...tiled }),
      rgb(64, 48, flat(64, 48, 250), { description: "Label" }),
    ]);

  it("reads the first page, names its level and the pixel size from DICOM_PIXEL_SPACING", async () => {
    for (const description of [unescaped, xml]) {
      const bytes = slide(description);
      await expectTissue(bytes, 256, 192);
      expect(probeImage(bytes, { regions: true })).toMatchObject({
        formatName: "Philips TIFF",
        levels: [{ width: 128, height: 96 }],
        pixelSize: { x: 0.227, y: 0.227, source: "philips" },
      });
    }
  });
});

describe("a Leica SCN", () => {
  // The collection is 20 mm x 15 mm; the macro image's view covers it all, the main image's a part of it.
  const scn = `<?xml version="1.0"?>
<scn xmlns="http://www.leica-microsystems.com/scn/2010/10/01">
  <collection name="slide" uuid="1" sizeX="20000000" sizeY="15000000">
    <image name="macro" uuid="2">
      <pixels sizeX="80" sizeY="60"><dimension sizeX="80" sizeY="60" r="0" ifd="0"/></pixels>
      <view sizeX="20000000" sizeY="15000000" offsetX="0" offsetY="0" spacingZ="0"/>
    </image>
    <image name="main" uuid="3">
      <device model="Leica SCN400;Leica SCN" version="1.4.0.10388 2011/05/27 13:18:09"/>
      <pixels sizeX="256" sizeY="192">
        <dimension sizeX="256" sizeY="192" r="0" ifd="1"/>
        <dimension sizeX="64" sizeY="48" r="1" ifd="2"/>
      </pixels>
      <view sizeX="128000" sizeY="96000" offsetX="3000000" offsetY="2000000" spacingZ="0"/>
      <scanSettings><objectiveSettings><objective>20</objective></objectiveSettings></scanSettings>
    </image>
  </collection>
</scn>`;
  const bytes = encodeTiff([rgb(80, 60, flat(80, 60, 30), { description: scn }), rgb(256, 192, tissue(256, 192), tiled), rgb(64, 48, flat(64, 48, 90), tiled)]);

  it("reads the main image's full resolution, not the macro on the first page, with its view's pixel size and objective", async () => {
    await expectTissue(bytes, 256, 192);
    expect(probeImage(bytes, { regions: true })).toMatchObject({
      formatName: "Leica SCN",
      width: 256,
      height: 192,
      levels: [{ width: 64, height: 48 }],
      objectiveMagnification: 20,
      // 128,000 nm over 256 pixels.
      pixelSize: { x: 0.5, y: 0.5, source: "leica" },
    });
  });
});

describe("a Ventana BIF", () => {
  const xmp = `<?xml version="1.0" encoding="utf-8"?><iScan BuildDate="Oct 10 2012" Magnification="40" ScanRes="0.2325" UnitNumber="BI10N0300"><AOI0 Left="0" Top="0" Right="256" Bottom="192"/></iScan>`;
  const bytes = encodeTiff([
    rgb(64, 48, flat(64, 48, 250), { description: "Label Image", software: "ScanOutputManager 1.1.0.15854", xmp }),
    rgb(80, 60, flat(80, 60, 30), { description: "Thumbnail" }),
    rgb(256, 192, tissue(256, 192), { ...tiled, description: "level=0 mag=40 quality=90", xmp }),
    rgb(128, 96, flat(128, 96, 90), { ...tiled, description: "level=1 mag=20 quality=90" }),
  ]);

  it("reads the page described level=0, never the label or thumbnail before it, with ScanRes as the pixel size", async () => {
    await expectTissue(bytes, 256, 192);
    expect(probeImage(bytes, { regions: true })).toMatchObject({
      formatName: "Ventana BIF",
      levels: [{ width: 128, height: 96 }],
      objectiveMagnification: 40,
      pixelSize: { x: 0.2325, y: 0.2325, source: "ventana" },
    });
  });
});
