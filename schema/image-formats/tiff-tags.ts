// TIFF 6.0 and BigTIFF numbers the readers share: the tags they use, the byte size of each field
// type, the compressions and sample formats they decode.

export const Tag = {
  ImageWidth: 256,
  ImageLength: 257,
  BitsPerSample: 258,
  Compression: 259,
  Photometric: 262,
  ImageDescription: 270,
  StripOffsets: 273,
  SamplesPerPixel: 277,
  RowsPerStrip: 278,
  StripByteCounts: 279,
  /** Pixels per ResolutionUnit along x and y (schema/image-formats/calibration.ts reads the pixel size from them). */
  XResolution: 282,
  YResolution: 283,
  PlanarConfiguration: 284,
  /** 1 none, 2 inch, 3 centimetre. */
  ResolutionUnit: 296,
  /** The writing software: Philips' slides say "Philips DP…". */
  Software: 305,
  Predictor: 317,
  TileWidth: 322,
  TileLength: 323,
  TileOffsets: 324,
  TileByteCounts: 325,
  /** Offsets of reduced-resolution levels (pyramidal OME-TIFF) or other child images. */
  SubIFDs: 330,
  SampleFormat: 339,
  /** Quantisation and Huffman tables shared by the JPEG-compressed blocks (an abbreviated JPEG stream). */
  JpegTables: 347,
  /** An XMP packet (BYTE, read as text): Ventana's slides keep their scan's <iScan> element there. */
  XmlPacket: 700,
  // Hamamatsu NDPI's private tags (schema/image-formats/ndpi.ts), named as tifffile names them.
  /** Present on every page of an NDPI: how a classic TIFF is told to be one. */
  NdpiFileFormat: 65420,
  /** The page's objective: > 0 a pyramid level, -1 the macro image, -2 the map. */
  NdpiSourceLens: 65421,
  /** Focal plane of a z-stack, in nm from the slide's centre: 0 is the plane in focus. */
  NdpiZOffset: 65424,
  /** Where each restart interval of the page's JPEG starts, from the strip's start (low 32 bits). */
  NdpiMcuStarts: 65426,
  /** The high 32 bits of the same offsets, in files past 4 GiB. */
  NdpiMcuStartsHigh: 65432,
} as const;

/** The tags a reader reads; every other tag is skipped without touching its value. */
export const TAGS_READ: ReadonlySet<number> = new Set(Object.values(Tag));

/** Byte size of each field type by type code (BYTE..DOUBLE, IFD, and BigTIFF's LONG8/SLONG8/IFD8). */
export const TYPE_SIZE: Readonly<Record<number, number>> = {
  1: 1,
  2: 1,
  3: 2,
  4: 4,
  5: 8,
  6: 1,
  7: 1,
  8: 2,
  9: 4,
  10: 8,
  11: 4,
  12: 8,
  13: 4,
  16: 8,
  17: 8,
  18: 8,
};

export const Compression = {
  None: 1,
  Lzw: 5,
  Jpeg: 7,
  AdobeDeflate: 8,
  PackBits: 32773,
  Deflate: 32946,
  /** Aperio's JPEG 2000 tiles: a codestream of Y, Cb and Cr components, no transform inside it. */
  Jpeg2000Ycbcr: 33003,
  /** Aperio's JPEG 2000 tiles: RGB through the codestream's own component transform. */
  Jpeg2000Rgb: 33005,
  /** JPEG 2000 as libtiff and GDAL name it. */
  Jpeg2000: 34712,
} as const;

export const COMPRESSION_NAMES: Readonly<Record<number, string>> = {
  1: "none",
  5: "LZW",
  7: "JPEG",
  8: "Deflate",
  32773: "PackBits",
  32946: "Deflate",
  33003: "JPEG 2000 (Aperio 33003, YCbCr)",
  33005: "JPEG 2000 (Aperio 33005, RGB)",
  34712: "JPEG 2000",
};

/** Whether blocks of this compression are JPEG 2000 codestreams (jpeg2000-tile.ts decodes them). */
export function isJpeg2000Compression(compression: number): boolean {
  return compression === Compression.Jpeg2000Ycbcr || compression === Compression.Jpeg2000Rgb || compression === Compression.Jpeg2000;
}

/** The message naming what the readers decode, for every refusal of a compression. */
const SUPPORTED_COMPRESSIONS = "none, LZW, Deflate, PackBits, JPEG, JPEG 2000";

/**
 * Compressions met in microscopy files that the readers do not decode, named as a person knows
 * them (the codes: libtiff's tiff.h, Aperio's and the TIFF registry's), so a refusal says "JPEG
 * 2000 (Aperio 33005)" rather than a number.
 */
const UNSUPPORTED_COMPRESSION_NAMES: Readonly<Record<number, string>> = {
  2: "CCITT modified Huffman",
  3: "CCITT Group 3 fax",
  4: "CCITT Group 4 fax",
  6: "old-style JPEG",
  34887: "LERC",
  34925: "LZMA",
  34926: "Zstandard",
  34927: "WebP",
  34933: "PNG",
  34934: "JPEG XR",
  50000: "Zstandard",
  50001: "WebP",
  50002: "JPEG XL",
};

/** Why a TIFF's compression is refused: its name where it has a known one, its code always. */
export function unsupportedCompression(compression: number): string {
  const name = UNSUPPORTED_COMPRESSION_NAMES[compression];
  return `TIFF compression ${name ? `${name}, code ${compression},` : compression} is not supported (supported: ${SUPPORTED_COMPRESSIONS})`;
}

export const SAMPLE_FORMATS = { 1: "uint", 2: "int", 3: "float" } as const;
export type SampleFormat = (typeof SAMPLE_FORMATS)[keyof typeof SAMPLE_FORMATS];
