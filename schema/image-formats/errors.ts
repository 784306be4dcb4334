// The one error every image reader throws (the worker's upload probe and the engine's decoders), so
// callers tell a fault of the input from any other failure by its type, never by its message.

/**
 * "unsupported": not a format or variant we read at all (415 at upload);
 * "invalid": a broken, truncated or forged file of a known format (422 at upload);
 * "too-large": a well-formed file past one of the limits in limits.ts (422 at upload).
 * A job that meets any of them fails for good with the message as its reason.
 */
type ImageDecodeErrorKind = "unsupported" | "invalid" | "too-large";

export class ImageDecodeError extends Error {
  readonly kind: ImageDecodeErrorKind;
  constructor(message: string, kind: ImageDecodeErrorKind = "invalid") {
    super(message);
    this.name = "ImageDecodeError";
    this.kind = kind;
  }
}
