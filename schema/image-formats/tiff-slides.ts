// Whole slides stored as TIFF, by each vendor's rules, as OpenSlide's vendor drivers and tifffile's
// series readers find them: which page holds the full resolution, which pages are its reduced
// levels (never the thumbnail, label or macro: on real slides they carry the patient's name and
// barcode), and the pixel size and objective the vendor's metadata states.
// - Aperio SVS: an ImageDescription starting "Aperio"; the full resolution first.
// - Philips TIFF: Software "Philips DP…" and an XML DataObject description; the full resolution
//   first; DICOM_PIXEL_SPACING (mm, row then column) for the pixel size.
// - Leica SCN: an XML <scn> description listing each image's resolutions with the page (ifd) of
//   each; the macro image is the one whose view covers the whole collection (nanometres), the main
//   image another; its pixel size is its view's size over its pixels.
// - Ventana BIF: an XMP packet with an <iScan> element (ScanRes: µm per pixel, Magnification);
//   pages described "Label Image", "Thumbnail", then the levels "level=0 mag=40 …", level=1 ….
// - Hamamatsu NDPI: a TIFF of its own kind (ndpi.ts); the pyramid's largest page of the focal plane
//   in focus; the resolution tags for the pixel size.
// - Any other TIFF whose second page is smaller than its first: a generic pyramid.
import { attributesOf as attributes, micrometres, type PixelSize } from "./calibration.ts";
import type { TileAdvance } from "./ventana-overlaps.ts";

/** A page's size in pixels. */
export interface PageSize {
  width: number;
  height: number;
}

type SlideVendor = "aperio" | "philips" | "leica" | "ventana" | "hamamatsu" | "generic";

export const SLIDE_FORMAT_NAMES: Readonly<Record<SlideVendor, string>> = {
  aperio: "Aperio SVS",
  philips: "Philips TIFF",
  leica: "Leica SCN",
  ventana: "Ventana BIF",
  hamamatsu: "Hamamatsu NDPI",
  generic: "pyramidal TIFF",
};

/** Where a slide's images lie in its TIFF, and what its vendor's metadata states. */
export interface SlideFacts {
  vendor: SlideVendor;
  /** The page holding the full resolution. */
  page: number;
  /** The reduced levels, largest first: each one's size and page. */
  levels: (PageSize & { page: number })[];
  /** Micrometres per pixel at full resolution from the vendor's metadata (Aperio's MPP is read with the other TIFF calibrations). */
  pixelSize: PixelSize | null;
  magnification: number | null;
  /** Ventana: where the stored tiles overlap, level 0's tile advance and each level page's downsample from it (the levels' sizes above are laid out). */
  tileOverlap?: { advance: TileAdvance; downsamples: ReadonlyMap<number, number> };
}

/** What a TIFF's first page says of its maker. */
interface FirstPageText {
  description: string | undefined;
  software: string | undefined;
  xmp: string | undefined;
}

/** The vendor a TIFF's first page names (an NDPI is told by its structure, a generic pyramid by its pages' sizes, not here), or null. */
export function slideVendorOf({ description, software, xmp }: FirstPageText): Exclude<SlideVendor, "generic" | "hamamatsu"> | null {
  const text = description?.trim() ?? "";
  if (text.startsWith("Aperio")) return "aperio";
  if (software?.startsWith("Philips DP") && text.endsWith("</DataObject>")) return "philips";
  if (text.endsWith("</scn>")) return "leica";
  if (
    xmp?.includes("<iScan") ||
    text === "Label Image" ||
    text === "Label_Image" ||
    software?.includes("Ventana") ||
    software?.startsWith("ScanOutputManager")
  ) {
    return "ventana";
  }
  return null;
}

/** OpenSlide's generic-tiff rule: a second page smaller than the first (pages of one size are a stack's planes). */
export function isGenericSlide(first: PageSize, second: PageSize | undefined): boolean {
  if (!second) return false;
  return second.width <= first.width && second.height <= first.height && second.width * second.height < first.width * first.height;
}

const positive = (text: string | undefined): number | null => {
  const value = text === undefined ? Number.NaN : Number(text);
  return Number.isFinite(value) && value > 0 ? value : null;
};

/** Philips: the first DICOM_PIXEL_SPACING attribute (the full resolution's), millimetres as `"row" "column"`. */
export function philipsPixelSize(xml: string): PixelSize | null {
  const value = /<Attribute\b[^>]*\bName="DICOM_PIXEL_SPACING"[^>]*>([^<]*)</.exec(xml)?.[1];
  // Philips writes the quotes around each number escaped (&quot;); an XML parser hands them over bare.
  const [row, column] = (value ?? "").replaceAll("&quot;", " ").replaceAll('"', " ").trim().split(/\s+/).map(positive);
  const [x, y] = [column && micrometres(column, "mm"), row && micrometres(row, "mm")];
  return x && y ? { x, y, source: "philips" } : null;
}

/**
 * Leica SCN: the main image (the first whose view is not the whole collection: that one is the
 * macro) and its brightfield resolutions (c and z 0): the full resolution's page, the others' sizes,
 * the pixel size (view nanometres over pixels) and the objective. Null when it names no such image.
 */
export function leicaSlide(xml: string): Omit<SlideFacts, "vendor"> | null {
  const collection = attributes(/<collection\b([^>]*)>/.exec(xml)?.[1] ?? "");
  for (const [, image] of xml.matchAll(/<image\b[^>]*>([\s\S]*?)<\/image>/g)) {
    const view = attributes(/<view\b([^>]*)\/?>/.exec(image!)?.[1] ?? "");
    const macro = Number(view.offsetX ?? 0) === 0 && Number(view.offsetY ?? 0) === 0 && view.sizeX === collection.sizeX && view.sizeY === collection.sizeY;
    if (macro) continue;
    const resolutions = [...image!.matchAll(/<dimension\b([^>]*)\/?>/g)]
      .map((m) => attributes(m[1]!))
      .filter((d) => Number(d.c ?? 0) === 0 && Number(d.z ?? 0) === 0)
      .map((d) => ({ r: Number(d.r ?? 0), page: Number(d.ifd), width: Number(d.sizeX), height: Number(d.sizeY) }))
      .filter((d) => [d.r, d.page, d.width, d.height].every(Number.isInteger))
      .sort((a, b) => a.r - b.r);
    const full = resolutions[0];
    if (full?.r !== 0) continue;
    const [nmX, nmY] = [positive(view.sizeX), positive(view.sizeY)];
    return {
      page: full.page,
      levels: resolutions.slice(1).map(({ width, height, page }) => ({ width, height, page })),
      pixelSize: leicaPixelSize(nmX, nmY, full),
      magnification: positive(/<objective>\s*([0-9.]+)\s*<\/objective>/.exec(image!)?.[1]),
    };
  }
  return null;
}

/** A Leica image's pixel size: its view's nanometres over its full resolution's pixels. */
function leicaPixelSize(nmX: number | null, nmY: number | null, full: { width: number; height: number }): PixelSize | null {
  const x = nmX && full.width > 0 ? micrometres(nmX / full.width, "nm") : null;
  const y = nmY && full.height > 0 ? micrometres(nmY / full.height, "nm") : null;
  return x && y ? { x, y, source: "leica" } : null;
}

/** Ventana: the iScan element's ScanRes (µm per pixel at full resolution) and Magnification. */
export function ventanaScan(xmp: string | undefined): { pixelSize: PixelSize | null; magnification: number | null } {
  const scan = attributes(/<iScan\b([^>]*)>/.exec(xmp ?? "")?.[1] ?? "");
  const um = positive(scan.ScanRes);
  return { pixelSize: um ? { x: um, y: um, source: "ventana" } : null, magnification: positive(scan.Magnification) };
}

/** Ventana: which described page is which, by OpenSlide's and tifffile's rule: level=N names a level, the lowest N the full resolution. */
export function ventanaLevel(description: string | undefined): number | null {
  const level = /(?:^|\s)level=(\d+)/.exec(description ?? "")?.[1];
  return level === undefined ? null : Number(level);
}
