// What a TIFF's headers say about its pixels beyond their values, read by the worker's upload
// probe and the engine's decoders alike: the channels' names (OME-XML's Channel elements) and the
// physical size of a pixel. This file alone decides whether a file's pixel size is trusted. Four
// places hold the size, tried in this order:
// 1. OME-XML (the first ImageDescription of an OME-TIFF): the Pixels element's PhysicalSizeX and
//    PhysicalSizeY, in PhysicalSizeXUnit / PhysicalSizeYUnit (µm when absent, as the OME schema says).
// 2. Aperio's description (an SVS: "Aperio Image Library ... |MPP = 0.4990|"), in µm a pixel.
// 3. ImageJ's description ("ImageJ=..." lines): `unit=` names the unit of the resolution tags, as
//    ImageJ writes a calibrated image (its `spacing=` is the z step, which a 2D measurement does not use).
// 4. The TIFF resolution tags alone: XResolution and YResolution pixels per ResolutionUnit, inch (2)
//    or centimetre (3). ResolutionUnit 1 (none) or no ResolutionUnit (the TIFF specification
//    defaults it to inch; ImageJ does not) means no calibration. So do the screen and print
//    defaults programs write whatever the image (72, 96, 150, 300 per inch, or the same per
//    centimetre over 2.54): ImageJ's TiffDecoder ignores 72 for the same reason, and a Kromp et al.
//    image at 96 dpi would otherwise have nuclei of millions of µm².
// A size that is not a positive finite number is no calibration; one outside what microscopes
// produce (MICROSCOPE_PIXEL_SIZE_UM) is set aside. Either of the last two, and a default, come with
// a warning that the image record, the dashboard and the client show.

import type { TiffTags } from "./tiff-page.ts";
import { Tag } from "./tiff-tags.ts";

/** Micrometres per pixel along x and y, and where they were read. */
export interface PixelSize {
  x: number;
  y: number;
  source: PixelSizeSource;
}

export const PIXEL_SIZE_SOURCES = ["ome", "imagej", "aperio", "tiff", "dicom", "philips", "leica", "ventana", "ome-zarr"] as const;
type PixelSizeSource = (typeof PIXEL_SIZE_SOURCES)[number];

/**
 * Micrometres per pixel that microscopes produce: 10 nm (beyond super-resolution's) to 50 µm (a
 * whole-slide overview). A file's size outside is set aside with a warning; a given one is refused.
 */
export const MICROSCOPE_PIXEL_SIZE_UM = { min: 0.01, max: 50 } as const;

/** Pixels per inch that screen and print software write whatever the image shows. */
const DEFAULT_DPI = [72, 96, 150, 300] as const;

/** A file's pixel size as the rest of the service may use it, and why the file's own was not used. */
interface Calibration {
  /** The trusted size; null when the file has none, or has one that is not trusted. */
  pixelSize: PixelSize | null;
  /** Why the file's resolution gives no size (a screen or print default, a size no microscope produces); null otherwise. */
  warning: string | null;
}

/** Where a size came from, as the dashboard and the client say it ("given": a prediction's pixel_size_um). */
const SOURCE_NAMES: Readonly<Record<PixelSizeSource | "given", string>> = {
  ome: "OME-XML",
  imagej: "ImageJ's calibration",
  aperio: "the Aperio description's MPP",
  tiff: "the TIFF resolution tags",
  dicom: "the DICOM PixelSpacing",
  philips: "the Philips DICOM_PIXEL_SPACING",
  leica: "the Leica SCN view and pixel sizes",
  ventana: "the Ventana iScan ScanRes",
  "ome-zarr": "the OME-Zarr scale",
  given: "given with the prediction",
};

/** "0.325 µm (OME-XML)", "0.65 × 1.3 µm (OME-XML)": a size with where it came from. */
export function describePixelSize(x: number, y: number, source: PixelSizeSource | "given"): string {
  return `${x === y ? x : `${x} × ${y}`} µm (${SOURCE_NAMES[source]})`;
}

/** Micrometres in one of each unit (OME's UnitsLength symbols, ImageJ's spellings). */
const MICRONS: Readonly<Record<string, number>> = {
  m: 1e6,
  meter: 1e6,
  metre: 1e6,
  dm: 1e5,
  cm: 1e4,
  mm: 1e3,
  millimeter: 1e3,
  millimetre: 1e3,
  centimeter: 1e4,
  centimetre: 1e4,
  µm: 1,
  um: 1,
  micron: 1,
  microns: 1,
  micrometer: 1,
  micrometre: 1,
  nm: 1e-3,
  nanometer: 1e-3,
  pm: 1e-6,
  Å: 1e-4,
  angstrom: 1e-4,
  in: 25_400,
  inch: 25_400,
};

/** `value` in `unit` as micrometres, or null for a unit that is no length (pixel) or unknown. */
export function micrometres(value: number, unit: string): number | null {
  // µ as the micro sign (U+00B5) or the Greek mu (U+03BC), and ImageJ's escaped "\u00B5m".
  const key = unit
    .trim()
    .replace(/^\\u00[bB]5/, "µ")
    .replace(/^\u03bc/, "µ");
  const factor = MICRONS[key] ?? MICRONS[key.toLowerCase()];
  // Twelve significant digits: 0.000227 mm is 0.227 µm, not the 0.22699999999999998 binary arithmetic gives.
  const size = factor === undefined ? Number.NaN : Number((value * factor).toPrecision(12));
  return Number.isFinite(size) && size > 0 ? size : null;
}

// WHATWG's "latin1" decoder is windows-1252: bytes 0x80..0x9f become these code points.
const WINDOWS_1252 =
  "\u20ac\u0081\u201a\u0192\u201e\u2026\u2020\u2021\u02c6\u2030\u0160\u2039\u0152\u008d\u017d\u008f\u0090\u2018\u2019\u201c\u201d\u2022\u2013\u2014\u02dc\u2122\u0161\u203a\u0153\u009d\u017e\u0178";

// Exported for its test only (test/engine/pixel-size.test.ts).
/**
 * An ImageDescription as its bytes meant it: the readers decode it as latin1 (windows-1252), while
 * OME-XML is UTF-8 (and ImageJ writes UTF-8 too), so "µm" arrives as "Âµm". The bytes are put back
 * and decoded as UTF-8; text that is not valid UTF-8 is returned as it came.
 */
export function utf8Description(text: string): string {
  if (!/[\u0080-\uffff]/.test(text)) return text;
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    const high = WINDOWS_1252.indexOf(text[i]!);
    if (code < 0x80 || (code >= 0xa0 && code <= 0xff)) bytes[i] = code;
    else if (high >= 0) bytes[i] = 0x80 + high;
    else return text;
  }
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    return text;
  }
}

/** The attributes of the first OME-XML element named `name` (any namespace prefix), unescaped. */
function omeAttributes(xml: string, name: string): Record<string, string> | null {
  const element = new RegExp(`<(?:\\w+:)?${name}\\b([^>]*)>`).exec(xml)?.[1];
  return element === undefined ? null : attributesOf(element);
}

/** Every OME-XML element named `name`'s attributes, in document order. */
function omeElements(xml: string, name: string): Record<string, string>[] {
  return [...xml.matchAll(new RegExp(`<(?:\\w+:)?${name}\\b([^>]*)>`, "g"))].map((m) => attributesOf(m[1]!));
}

/** An XML start tag's attributes (the text after its name), entities decoded. */
export function attributesOf(element: string): Record<string, string> {
  const attributes: Record<string, string> = {};
  for (const m of element.matchAll(/([\w:.-]+)\s*=\s*(?:"([^"]*)"|'([^']*)')/g)) attributes[m[1]!] = unescapeXml(m[2] ?? m[3] ?? "");
  return attributes;
}

function unescapeXml(text: string): string {
  return text.replace(/&(#x[0-9a-fA-F]+|#\d+|amp|lt|gt|quot|apos);/g, (_, entity: string) => {
    if (entity[0] === "#") {
      const code = entity[1] === "x" ? Number.parseInt(entity.slice(2), 16) : Number(entity.slice(1));
      return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : "";
    }
    return { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" }[entity]!;
  });
}

function omePixelSize(xml: string): PixelSize | null {
  const pixels = omeAttributes(xml, "Pixels");
  if (!pixels || pixels.PhysicalSizeX === undefined) return null;
  const x = micrometres(Number(pixels.PhysicalSizeX), pixels.PhysicalSizeXUnit ?? "µm");
  // Only x given: square pixels, as Bio-Formats reads such a file.
  const y = pixels.PhysicalSizeY === undefined ? x : micrometres(Number(pixels.PhysicalSizeY), pixels.PhysicalSizeYUnit ?? "µm");
  return x === null || y === null ? null : { x, y, source: "ome" };
}

/** Pixels per unit from a resolution tag: a positive finite rational, or null. */
function resolution(tags: TiffTags, tag: number): number | null {
  const value = tags.numbers(tag)?.[0];
  return value !== undefined && Number.isFinite(value) && value > 0 ? value : null;
}

/** What the file claims: a size, the default resolution it holds instead (pixels per inch), or nothing. */
type Claim = PixelSize | { defaultDpi: number } | null;

/**
 * An Aperio SVS's pixel size: its ImageDescription starts "Aperio" and holds `|MPP = 0.4990|`,
 * micrometres per pixel of the full-resolution level, square (the key OpenSlide reads as
 * aperio.MPP and gives as mpp-x and mpp-y). Its resolution tags say nothing: Aperio leaves them out
 * or writes a default.
 */
function aperioPixelSize(text: string): PixelSize | null {
  if (!text.startsWith("Aperio")) return null;
  const mpp = /\|\s*MPP\s*=\s*([0-9.eE+-]+)\s*(?:\||$)/.exec(text)?.[1];
  const um = mpp === undefined ? Number.NaN : Number(mpp);
  return Number.isFinite(um) && um > 0 ? { x: um, y: um, source: "aperio" } : null;
}

function claimedPixelSize(description: string | undefined, tags: TiffTags): Claim {
  const text = description === undefined ? undefined : utf8Description(description);
  if (text?.includes("<OME")) {
    const ome = omePixelSize(text);
    if (ome) return ome;
  }
  const aperio = text === undefined ? null : aperioPixelSize(text);
  if (aperio) return aperio;
  const xPerUnit = resolution(tags, Tag.XResolution);
  const yPerUnit = resolution(tags, Tag.YResolution) ?? xPerUnit;
  if (xPerUnit === null || yPerUnit === null) return null;
  const resolutionUnit = tags.numbers(Tag.ResolutionUnit)?.[0];
  if (text?.startsWith("ImageJ=")) {
    const unit = /^unit=(.*)$/m.exec(text)?.[1];
    // ImageJ writes the unit it calibrated in with ResolutionUnit 1 (none); inch and cm are the tags'.
    if (unit !== undefined && resolutionUnit !== 2 && resolutionUnit !== 3) {
      const x = micrometres(1 / xPerUnit, unit);
      const y = micrometres(1 / yPerUnit, unit);
      return x === null || y === null ? null : { x, y, source: "imagej" };
    }
  }
  if (resolutionUnit !== 2 && resolutionUnit !== 3) return null;
  const perInch = resolutionUnit === 2 ? 1 : 2.54;
  const xDefault = defaultDpi(xPerUnit * perInch);
  if (xDefault !== null && defaultDpi(yPerUnit * perInch) !== null) return { defaultDpi: xDefault };
  const unit = resolutionUnit === 2 ? "inch" : "cm";
  const x = micrometres(1 / xPerUnit, unit);
  const y = micrometres(1 / yPerUnit, unit);
  return x === null || y === null ? null : { x, y, source: "tiff" };
}

/** The screen or print default `dpi` is, allowing for a centimetre value rounded when written (37.7953); else null. */
function defaultDpi(dpi: number): number | null {
  return DEFAULT_DPI.find((d) => Math.abs(dpi - d) <= d * 1e-4) ?? null;
}

/** A size with four significant digits, for a sentence. */
const rounded = (um: number) => Number(um.toPrecision(4));

/**
 * The pixel size of a TIFF from a slide vendor's metadata (tiff-slides.ts), else its first page's
 * description and resolution tags, if it is to be trusted; else none, with the warning that says
 * why when the file claimed one.
 */
export function tiffCalibration(description: string | undefined, tags: TiffTags, vendorSize: PixelSize | null = null): Calibration {
  return trustedCalibration(vendorSize ?? claimedPixelSize(description, tags));
}

/**
 * A claimed size as the service may use it, whatever the format: none for a screen default or a
 * size no microscope produces, saying why.
 */
export function trustedCalibration(claim: Claim): Calibration {
  if (claim === null) return { pixelSize: null, warning: null };
  if ("defaultDpi" in claim) {
    return {
      pixelSize: null,
      warning: `The file's resolution, ${claim.defaultDpi} dpi, is a screen or print default, not a microscope's calibration`,
    };
  }
  const { min, max } = MICROSCOPE_PIXEL_SIZE_UM;
  if ([claim.x, claim.y].some((um) => um < min || um > max)) {
    const size = describePixelSize(rounded(claim.x), rounded(claim.y), claim.source);
    return { pixelSize: null, warning: `The file's pixel size, ${size}, is outside the ${min}-${max} µm that microscopes produce` };
  }
  return { pixelSize: claim, warning: null };
}

/**
 * The objective's magnification a TIFF's description states: Aperio's `AppMag = 20`, or OME-XML's
 * first Objective's NominalMagnification; null when it states none.
 */
export function tiffMagnification(description: string | undefined): number | null {
  if (description === undefined) return null;
  const text = utf8Description(description);
  const stated = text.startsWith("Aperio")
    ? /\|\s*AppMag\s*=\s*([0-9.]+)/.exec(text)?.[1]
    : text.includes("<OME")
      ? omeElements(text, "Objective")[0]?.NominalMagnification
      : undefined;
  const magnification = stated === undefined ? Number.NaN : Number(stated);
  return Number.isFinite(magnification) && magnification > 0 ? magnification : null;
}

/**
 * The channels' names from OME-XML: the Pixels element's Channel elements' Name attributes, when
 * there is one named Channel per channel of the image (an RGB OME-TIFF describes its three samples
 * with one Channel: no names then). Null when the file names no channels.
 */
export function tiffChannelNames(description: string | undefined, channels: number): string[] | null {
  if (description === undefined || !description.includes("<OME")) return null;
  const text = utf8Description(description);
  // The first image's channels: those before the end of its Pixels element.
  const pixels = text.search(/<(?:\w+:)?Pixels\b/);
  if (pixels < 0) return null;
  const end = text.slice(pixels).search(/<\/(?:\w+:)?Pixels>/);
  const names = omeElements(end < 0 ? text.slice(pixels) : text.slice(pixels, pixels + end), "Channel").map((c) => c.Name?.trim() ?? "");
  return names.length === channels && names.every((n) => n !== "") ? names : null;
}
