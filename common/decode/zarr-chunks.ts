// An OME-Zarr chunk's bytes as stored, decoded: blosc and zstd through numcodecs (the Zarr
// project's JavaScript codecs, c-blosc and zstd built to WebAssembly), zlib and gzip through the
// bounded inflater. Each chunk's decoded size is known from the array's metadata, and is checked
// against what the compressed data declares (blosc's header, zstd's frame content size) before the
// codec allocates, so a chunk that would inflate past it is refused unread.
import Blosc from "numcodecs/blosc";
import Zstd from "numcodecs/zstd";
import { ImageDecodeError, type ZarrCodec } from "../../schema/image-formats/index.ts";
import { inflateWithin } from "./inflate-bounded.ts";

const blosc = Blosc.fromConfig({ id: "blosc" });
const zstd = Zstd.fromConfig({ id: "zstd", level: 1 });

/** A chunk's `expected` decoded bytes; `what` names it in errors. */
export async function decodeZarrChunk(stored: Uint8Array, codec: ZarrCodec, expected: number, what: string): Promise<Uint8Array> {
  const tooLarge = (declared: number) =>
    new ImageDecodeError(`OME-Zarr ${what} declares ${declared} decoded bytes where its array's chunks hold ${expected}: file corrupt or forged`);
  let decoded: Uint8Array;
  if (codec === null) decoded = stored;
  else if (codec === "zlib" || codec === "gzip") {
    const inflated = inflateWithin(stored, expected, { framing: codec, complete: true });
    if (inflated === "too large")
      throw new ImageDecodeError(`OME-Zarr ${what} inflates past the ${expected} bytes its array's chunks hold: file corrupt or forged`);
    if (!(inflated instanceof Uint8Array)) throw new ImageDecodeError(`OME-Zarr ${what} is corrupt: ${inflated.corrupt}`);
    decoded = inflated;
  } else if (codec === "blosc") {
    // c-blosc's header: version, versionlz, flags, typesize, then nbytes, blocksize and cbytes (little-endian 32-bit).
    if (stored.length < 16) throw new ImageDecodeError(`OME-Zarr ${what} is shorter than a blosc header`);
    const header = new DataView(stored.buffer, stored.byteOffset, 16);
    const [nbytes, cbytes] = [header.getUint32(4, true), header.getUint32(12, true)];
    if (nbytes !== expected) throw tooLarge(nbytes);
    if (cbytes > stored.length) throw new ImageDecodeError(`OME-Zarr ${what} is truncated: blosc declares ${cbytes} bytes, ${stored.length} stored`);
    decoded = await codecDecode(blosc, stored, what);
  } else {
    const declared = zstdContentSize(stored);
    if (declared === null) throw new ImageDecodeError(`OME-Zarr ${what}: a zstd frame without its content size is not supported`, "unsupported");
    if (declared !== expected) throw tooLarge(declared);
    decoded = await codecDecode(zstd, stored, what);
  }
  if (decoded.length !== expected)
    throw new ImageDecodeError(`OME-Zarr ${what} decodes to ${decoded.length} bytes, not the ${expected} its array's chunks hold`);
  return decoded;
}

async function codecDecode(codec: { decode(data: Uint8Array): Uint8Array | Promise<Uint8Array> }, stored: Uint8Array, what: string): Promise<Uint8Array> {
  try {
    return await codec.decode(stored);
  } catch (error) {
    throw new ImageDecodeError(`OME-Zarr ${what} is corrupt: ${(error as Error).message}`);
  }
}

/** A zstd frame's Frame_Content_Size (RFC 8878 3.1.1.1), or null when the frame leaves it out. */
function zstdContentSize(frame: Uint8Array): number | null {
  if (frame.length < 6 || frame[0] !== 0x28 || frame[1] !== 0xb5 || frame[2] !== 0x2f || frame[3] !== 0xfd) {
    throw new ImageDecodeError("OME-Zarr zstd chunk does not start with a zstd frame");
  }
  const descriptor = frame[4]!;
  const singleSegment = (descriptor >> 5) & 1;
  const sizeFlag = descriptor >> 6;
  const fieldBytes = sizeFlag === 0 ? singleSegment : [0, 2, 4, 8][sizeFlag]!;
  if (fieldBytes === 0) return null;
  const at = 5 + (singleSegment ? 0 : 1) + [0, 1, 2, 4][descriptor & 3]!;
  if (at + fieldBytes > frame.length) throw new ImageDecodeError("OME-Zarr zstd chunk is truncated in its frame header");
  let size = 0;
  for (let k = fieldBytes - 1; k >= 0; k--) size = size * 256 + frame[at + k]!;
  return fieldBytes === 2 ? size + 256 : size;
}
