// JPEG header rules (ITU T.81, table B.1): which markers carry the frame header, and the channels a
// decode gives. The decoder (jpeg-js) turns three and four components (YCbCr, CMYK, YCCK) into RGB,
// so a JPEG has one channel (grayscale) or three.

/**
 * Marker segments read looking for the frame header: real files have a few dozen before it (APPn,
 * DQT, DHT); a file of tiny segments would otherwise cost a read per few bytes.
 */
export const MAX_JPEG_SEGMENTS_BEFORE_FRAME = 4096;

/** SOF0..SOF15, except DHT (C4), JPG (C8) and DAC (CC), which share the range. */
export function isJpegFrameMarker(code: number): boolean {
  return code >= 0xc0 && code <= 0xcf && code !== 0xc4 && code !== 0xc8 && code !== 0xcc;
}

/** Markers without a length field: TEM, RST0..7, SOI, EOI. */
export function isJpegStandaloneMarker(code: number): boolean {
  return code === 0x01 || (code >= 0xd0 && code <= 0xd9);
}

export function jpegChannels(components: number): number {
  return components === 1 ? 1 : 3;
}

/** Samples per pixel the decoder holds: jpeg-js works in RGB(A) whatever the file's components. */
export const JPEG_WORKING_CHANNELS = 4;

/**
 * Whether `dataBytes` after the frame header can hold a width × height frame: every 8x8 block of
 * the full-resolution component costs at least one bit of entropy-coded data (its DC difference
 * code), so a frame larger than that is truncated or forged, which tells before the decoder
 * allocates the whole frame.
 */
export function jpegFrameFits(width: number, height: number, dataBytes: number): boolean {
  return dataBytes * 8 >= Math.ceil(width / 8) * Math.ceil(height / 8);
}

/** A complete JPEG ends with its EOI marker (`tail`: the file's last 2 bytes). */
export function jpegEndsWithEoi(tail: Uint8Array): boolean {
  return tail.length === 2 && tail[0] === 0xff && tail[1] === 0xd9;
}
