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

export const Compression = { None: 1, Lzw: 5, Jpeg: 7, AdobeDeflate: 8, PackBits: 32773, Deflate: 32946 } as const;

export const COMPRESSION_NAMES: Readonly<Record<number, string>> = { 1: "none", 5: "LZW", 7: "JPEG", 8: "Deflate", 32773: "PackBits", 32946: "Deflate" };

/** The message naming what the readers decode, for every refusal of a compression. */
export const SUPPORTED_COMPRESSIONS = "none, LZW, Deflate, PackBits, JPEG";

export const SAMPLE_FORMATS = { 1: "uint", 2: "int", 3: "float" } as const;
export type SampleFormat = (typeof SAMPLE_FORMATS)[keyof typeof SAMPLE_FORMATS];
