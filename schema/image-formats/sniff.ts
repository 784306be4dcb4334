// Recognising a format from a file's first bytes (never its name): the signatures of PNG
// (ISO 15948), JPEG (ITU T.81 SOI followed by a marker), TIFF and BigTIFF (byte order, 42 or 43).

export type ImageFormat = "tiff" | "png" | "jpeg";

/** Bytes enough to tell every format apart. */
export const SNIFF_BYTES = 8;

export function sniffImageFormat(head: Uint8Array): ImageFormat | null {
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
  return null;
}
