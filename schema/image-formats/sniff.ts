// Recognising a format from a file's first bytes (never its name): the signatures of PNG
// (ISO 15948), JPEG (ITU T.81 SOI followed by a marker), TIFF and BigTIFF (byte order, 42 or 43),
// DICOM Part 10 ("DICM" after a 128-byte preamble, PS3.10 7.1), and a ZIP (a local file header,
// APPNOTE 4.3.7), read as an OME-Zarr store when it holds one.

export type ImageFormat = "tiff" | "png" | "jpeg" | "dicom" | "zarr";

/** What a file's first bytes say: an image format, or a ZIP, which may hold an OME-Zarr store or a DICOM series. */
type SniffedFormat = Exclude<ImageFormat, "zarr"> | "zip";

/** Bytes enough to tell every format apart, and to name the formats the readers refuse (DICOM's "DICM" sits at 128). */
export const SNIFF_BYTES = 132;

export function sniffImageFormat(head: Uint8Array): SniffedFormat | null {
  if (
    head.length >= 8 &&
    head[0] === 0x89 &&
    head[1] === 0x50 &&
    head[2] === 0x4e &&
    head[3] === 0x47 &&
    head[4] === 0x0d &&
    head[5] === 0x0a &&
    head[6] === 0x1a &&
    head[7] === 0x0a
  )
    return "png";
  if (head.length >= 3 && head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return "jpeg";
  if (head.length >= 4) {
    const ii = head[0] === 0x49 && head[1] === 0x49 && (head[2] === 42 || head[2] === 43) && head[3] === 0;
    const mm = head[0] === 0x4d && head[1] === 0x4d && head[2] === 0 && (head[3] === 42 || head[3] === 43);
    if (ii || mm) return "tiff";
  }
  if (ascii(head, 128, 4) === "DICM") return "dicom";
  if (isZip(head)) return "zip";
  return null;
}

/** Bio-Formats reads them all (bfconvert, with its pyramid and tiles for a slide). */
const BFCONVERT =
  "convert it to a pyramidal OME-TIFF with Bio-Formats (bfconvert -pyramid-resolutions 4 -tilex 512 -tiley 512 -compression JPEG image out.ome.tif)";

/** Formats met in microscopy that the readers do not read, by signature, each with a conversion that works. */
const UNREAD_FORMATS: { name: string; matches: (head: Uint8Array) => boolean; convert: string }[] = [
  {
    name: "a ZIP archive holding neither an OME-Zarr store (its multiscales metadata, .zattrs or zarr.json) nor a DICOM whole-slide series",
    matches: isZip,
    convert:
      "zip an OME-Zarr store with its metadata (cd image.zarr && zip -r -0 ../image.zarr.zip .), or a DICOM series' files stored (zip -r -0 series.zip series/)",
  },
  { name: "Zeiss CZI", matches: (h) => ascii(h, 0, 10) === "ZISRAWFILE", convert: BFCONVERT },
  { name: "Nikon ND2", matches: (h) => h[0] === 0xda && h[1] === 0xce && h[2] === 0xbe && h[3] === 0x0a, convert: BFCONVERT },
  { name: "Leica LIF", matches: (h) => h[0] === 0x70 && h[1] === 0 && h[2] === 0 && h[3] === 0 && h[8] === 0x2a, convert: BFCONVERT },
  { name: "HDF5 (Imaris .ims and others)", matches: (h) => ascii(h, 1, 3) === "HDF" && h[0] === 0x89, convert: BFCONVERT },
  {
    name: "JPEG 2000 (JP2)",
    matches: (h) => ascii(h, 4, 4) === "jP  ",
    convert: "convert it to a tiled TIFF with vips (vips tiffsave image.jp2 image.tif --tile --compression jpeg)",
  },
];

function isZip(head: Uint8Array): boolean {
  return head[0] === 0x50 && head[1] === 0x4b && head[2] === 3 && head[3] === 4;
}

function ascii(head: Uint8Array, at: number, length: number): string {
  return head.length < at + length ? "" : String.fromCharCode(...head.subarray(at, at + length));
}

/**
 * The refusal of a file the readers cannot read, from its first SNIFF_BYTES (fewer name fewer
 * formats): the format named where its signature is known, and one conversion that works.
 */
export function unsupportedFileMessage(head: Uint8Array): string {
  const known = UNREAD_FORMATS.find((format) => format.matches(head));
  const base = "File is not a supported image: expected TIFF (OME-TIFF, whole-slide TIFFs), DICOM whole-slide, a zipped OME-Zarr, PNG or JPEG";
  return known ? `${base}; this is ${known.name}: ${known.convert}` : base;
}
