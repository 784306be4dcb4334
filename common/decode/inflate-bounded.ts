// Deflate inflation (RFC 1951, raw or in its zlib wrapper, RFC 1950) that never produces more than
// the caller can use: node's zlib stops and throws as soon as its output passes maxOutputLength, so
// a stream that would inflate to a gigabyte costs no more than `limit` bytes and the time to
// produce them. The one inflater of the project's readers of untrusted files: TIFF Deflate blocks
// and PNG image data (the engine's decoders), ROI archive entries and label PNGs (annotation import,
// in workerd, whose node:zlib is the same native zlib). Input is read at native speed, so even
// deflate data made of nothing but empty blocks (5 bytes each, no output) costs milliseconds per
// megabyte; callers still bound how much input they hand over.
import { constants, gunzipSync, inflateRawSync, inflateSync } from "node:zlib";
import { ImageDecodeError } from "../../schema/image-formats/index.ts";

/**
 * Headroom above the limit given to zlib: workerd's node:zlib grows its output 64 KiB at a time and
 * refuses ("Memory limit exceeded") a growth step that would pass maxOutputLength, even when the
 * data itself fits, so an exactly sized limit fails there for outputs above 64 KiB. The result is
 * checked against the limit itself afterwards.
 */
const GROWTH_STEP = 64 * 1024;

interface InflateOptions {
  /** "zlib": RFC 1950 header and Adler-32 around the deflate data (PNG, TIFF, Zarr's zlib); "raw": bare deflate (ZIP); "gzip": RFC 1952 (Zarr's gzip). */
  framing: "zlib" | "raw" | "gzip";
  /**
   * true: data that stops before its final block is corrupt (a ZIP entry). false: it yields what it
   * has, and the caller decides whether that is enough (a TIFF block or PNG image data of known size).
   */
  complete: boolean;
}

/** The inflated bytes, "too large" past `limit`, or why the data is not valid deflate data. */
type Inflated = Uint8Array | "too large" | { corrupt: string };

export function inflateWithin(input: Uint8Array, limit: number, options: InflateOptions): Inflated {
  const inflate = options.framing === "raw" ? inflateRawSync : options.framing === "gzip" ? gunzipSync : inflateSync;
  try {
    const inflated = inflate(input, {
      maxOutputLength: Math.max(1, limit) + GROWTH_STEP,
      finishFlush: options.complete ? constants.Z_FINISH : constants.Z_SYNC_FLUSH,
    });
    return inflated.length > limit ? "too large" : new Uint8Array(inflated.buffer, inflated.byteOffset, inflated.length);
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === "ERR_BUFFER_TOO_LARGE" || (error as Error).message === "Memory limit exceeded") return "too large";
    return { corrupt: (error as Error).message };
  }
}

/** For the image decoders: zlib data of at most `limit` bytes, possibly short; refusals are ImageDecodeErrors naming `what`. */
export function inflateBounded(input: Uint8Array, limit: number, what: string): Uint8Array {
  const inflated = inflateWithin(input, limit, { framing: "zlib", complete: false });
  if (inflated === "too large") throw new ImageDecodeError(`${what} inflates past the ${limit} bytes the image can hold: file corrupt or forged`);
  if (!(inflated instanceof Uint8Array)) throw new ImageDecodeError(`${what} is corrupt: ${inflated.corrupt}`);
  return inflated;
}
