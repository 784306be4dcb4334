// The JPEG 2000 decoder the tile decoder uses (jpeg2000-tile.ts), once loaded. It is WebAssembly,
// instantiated asynchronously once a thread (jpeg2000-wasm.ts), while block decoding is
// synchronous (training decodes in tight loops), so whoever opens an image that may hold JPEG 2000
// loads it first: the region reader does. This file imports nothing of Node's: the worker, which
// reaches the block decoders through its label-image import, never loads the codec and never meets
// a JPEG 2000 block in a label image it accepts.
import { ImageDecodeError } from "../../schema/image-formats/index.ts";

/** The part of OpenJPEG's WebAssembly decoder (@cornerstonejs/codec-openjpeg) used here. */
export interface OpenJpegDecoder {
  getEncodedBuffer(length: number): Uint8Array;
  decode(): void;
  getDecodedBuffer(): Uint8Array;
  getFrameInfo(): { width: number; height: number; bitsPerSample: number; componentCount: number; isSigned: boolean };
}

let decoder: OpenJpegDecoder | undefined;
let onFailure: (() => void) | undefined;
/** OpenJPEG's "[ERROR] ..." lines during the current decode. */
let errors: string[] = [];

/**
 * Where the module's output goes (its `print`). The WebAssembly build reports a failed decode only
 * there: decode() returns as if it had succeeded and the previous tile's pixels stay in its buffer,
 * so these lines are what tells a corrupt tile (its progress lines are dropped).
 */
export function openJpegOutput(line: string): void {
  if (line.startsWith("[ERROR]") && errors.length < 8) errors.push(line.slice(7).trim());
}

/** Makes `loaded` this thread's decoder; `reset` forgets the instance after a failure inside it. */
export function useJpeg2000Decoder(loaded: OpenJpegDecoder, reset: () => void): void {
  decoder = loaded;
  onFailure = reset;
}

interface Jpeg2000Pixels {
  width: number;
  height: number;
  components: number;
  /** Interleaved samples, one byte each (the readers take 8-bit JPEG 2000 only). */
  samples: Uint8Array;
}

/**
 * Decodes a codestream whose header the caller has checked (schema/image-formats/jpeg2000.ts):
 * what it allocates follows the size the header declares.
 */
export function decodeJpeg2000(codestream: Uint8Array): Jpeg2000Pixels {
  if (!decoder) throw new ImageDecodeError("JPEG 2000 blocks are decoded by the region reader, which loads their decoder first", "unsupported");
  decoder.getEncodedBuffer(codestream.length).set(codestream);
  errors = [];
  try {
    decoder.decode();
  } catch (error) {
    // A failure inside WebAssembly may leave the module's memory in any state: the next load makes a new one.
    decoder = undefined;
    onFailure?.();
    throw new ImageDecodeError(`JPEG 2000 data corrupt or truncated: OpenJPEG could not decode it (${describe(error)})`);
  }
  if (errors.length > 0) throw new ImageDecodeError(`JPEG 2000 data corrupt or truncated: ${errors.join("; ")}`);
  const frame = decoder.getFrameInfo();
  // A view of the module's memory, which the next decode overwrites.
  const samples = decoder.getDecodedBuffer().slice();
  return { width: frame.width, height: frame.height, components: frame.componentCount, samples };
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : typeof error === "string" ? error : "an exception in the decoder";
}
