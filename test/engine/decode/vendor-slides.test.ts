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

describe("a Ventana BIF whose tiles overlap", () => {
  // The scene the scanner saw, each pixel naming its place: red is x, green is y (mod 256).
  const scene = (x: number, y: number) => [x % 256, y % 256, 128];
  const tile = 64;
  const [across, down] = [4, 3];
  // RIGHT joints overlap 8 px (confidence 45) and 9 px (30) in turn: 8.25 on average, a 55.75 px advance;
  // UP joints 4 px: a 60 px advance. Cells start at whole pixels: 0, 55, 111, 167 across.
  const advance = { x: 55.75, y: 60 };
  const start = (cell: number, step: number) => Math.floor(cell * step);
  const laidOut = { width: start(across - 1, advance.x) + tile, height: start(down - 1, advance.y) + tile };

  /** Tiles are numbered from 1 at the bottom left, serpentine: left to right, then right to left a row up. */
  const tileNumber = (column: number, row: number) => {
    const fromBottom = down - 1 - row;
    return fromBottom * across + (fromBottom % 2 === 0 ? column : across - 1 - column) + 1;
  };
  const joints: string[] = [];
  for (let row = 0; row < down; row++) {
    for (let column = 0; column < across; column++) {
      const [overlap, confidence] = column % 2 === 0 ? [8, 45] : [9, 30];
      if (column + 1 < across) {
        joints.push(
          `<TileJointInfo FlagJoined="1" Confidence="${confidence}" Direction="RIGHT" Tile1="${tileNumber(column, row)}" Tile2="${tileNumber(column + 1, row)}" OverlapX="${overlap}" OverlapY="1"/>`,
        );
      }
      if (row > 0)
        joints.push(
          `<TileJointInfo FlagJoined="1" Confidence="70" Direction="UP" Tile1="${tileNumber(column, row)}" Tile2="${tileNumber(column, row - 1)}" OverlapX="2" OverlapY="4"/>`,
        );
    }
  }
  const stitching = (entries: string[]) =>
    `<EncodeInfo Ver="2"><SlideStitchInfo><ImageInfo AOIScanned="1" AOIIndex="0" Width="${tile}" Height="${tile}" NumRows="${down}" NumCols="${across}" Pos-X="0" Pos-Y="0">${entries.join("")}</ImageInfo></SlideStitchInfo><AoiOrigin><AOI0 OriginX="0" OriginY="0"/></AoiOrigin></EncodeInfo>`;

  /**
   * A level `downsample` times smaller, stored as the scanner stores it: each level-0 tile shrunk into
   * a cell, cells packed side by side. A tile's parts under its right and lower neighbours are dark,
   * so a seam shows wherever the wrong tile is read.
   */
  function storedLevel(downsample: number): Uint8Array {
    const [width, height] = [(across * tile) / downsample, (down * tile) / downsample];
    const values = new Uint8Array(width * height * 3);
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        const [tx, ty] = [Math.floor((x * downsample) / tile), Math.floor((y * downsample) / tile)];
        const [inX, inY] = [(x * downsample) % tile, (y * downsample) % tile];
        const hidden = (tx + 1 < across && inX >= start(tx + 1, advance.x) - start(tx, advance.x)) || (ty + 1 < down && inY >= advance.y);
        values.set(hidden ? [0, 0, 0] : scene(start(tx, advance.x) + inX, start(ty, advance.y) + inY), (y * width + x) * 3);
      }
    }
    return values;
  }
  const xmp = `<?xml version="1.0" encoding="utf-8"?><iScan Magnification="40" ScanRes="0.25" Z-layers="1"/>`;
  const slide = (entries: string[]) =>
    encodeTiff([
      rgb(64, 48, flat(64, 48, 250), { description: "Label Image", xmp }),
      rgb(across * tile, down * tile, storedLevel(1), { ...tiled, description: "level=0 mag=40 quality=90", xmp: stitching(entries) }),
      rgb((across * tile) / 2, (down * tile) / 2, storedLevel(2), { ...tiled, description: "level=1 mag=20 quality=90" }),
    ]);
  const bytes = slide(joints);

  it("lays its tiles out at the advance the joints' overlaps give, each level alike", () => {
    expect(laidOut).toEqual({ width: 231, height: 184 });
    expect(probeImage(bytes, { regions: true })).toMatchObject({
      formatName: "Ventana BIF",
      ...laidOut,
      // Level 1: cells of 32 px stepping 27.875 and 30: 83 + 32 across, 60 + 32 down.
      levels: [{ width: 115, height: 92 }],
    });
  });

  it("shows the scene without seams, through the region reader and the whole decoder alike", async () => {
    const regions = await openImageRegions(bytesSource(bytes));
    expect({ width: regions.width, height: regions.height }).toEqual(laidOut);
    const whole = decodeImage(bytes);
    expect({ width: whole.width, height: whole.height }).toEqual(laidOut);
    // A region across every joint of the middle row, and its neighbours above and below.
    const [x0, y0, w, h] = [40, 50, 180, 80];
    const region = await regions.readRegion(x0, y0, w, h);
    const plane = laidOut.width * laidOut.height;
    for (let y = y0; y < y0 + h; y++) {
      for (let x = x0; x < x0 + w; x++) {
        const [red, green] = scene(x, y);
        const at = (y - y0) * w + (x - x0);
        expect([region.data[at], region.data[w * h + at]], `region at ${x},${y}`).toEqual([red, green]);
        expect([whole.data[y * laidOut.width + x], whole.data[plane + y * laidOut.width + x]], `whole at ${x},${y}`).toEqual([red, green]);
      }
    }
  });

  it("reads a reduced level laid out from its shrunk cells", async () => {
    const regions = await openImageRegions(bytesSource(bytes));
    const level = await regions.readLevel!(0);
    expect({ width: level.width, height: level.height }).toEqual({ width: 115, height: 92 });
    // Level-1 pixel (40, 40) is in cell (1, 1), which starts at (27, 30): 13 and 10 px into it, 26
    // and 20 px into level-0 tile (1, 1), which shows the scene from (55, 60).
    const pixel = await level.readRegion(40, 40, 1, 1);
    expect([...pixel.data]).toEqual(scene(55 + 26, 60 + 20));
  });

  it("is refused when a joint names a tile outside its area", () => {
    const forged = slide([...joints, `<TileJointInfo FlagJoined="1" Confidence="90" Direction="RIGHT" Tile1="1" Tile2="99" OverlapX="8" OverlapY="0"/>`]);
    expect(() => probeImage(forged, { regions: true })).toThrow(/Ventana BIF corrupt: a tile joint names tile 99, outside its area's 12 tiles/);
  });

  it("is refused when its joints overlap by more than half a tile", () => {
    const forged = slide(joints.map((joint) => joint.replace(/OverlapX="\d+"/, 'OverlapX="40"')));
    expect(() => probeImage(forged, { regions: true })).toThrow(/Ventana BIF corrupt: its tiles overlap by 40\.0 x 4\.0 pixels/);
  });
});
