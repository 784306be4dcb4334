// A ZIP archive's central directory (PKWARE APPNOTE 6.3, with its ZIP64 records), read through
// header-parse.ts requests: the end record from the file's last 64 KiB, then the directory in one
// read, bounded (MAX_ZIP_ENTRIES, MAX_ZIP_DIRECTORY_BYTES) before it is read. An entry's data is
// found through its local header (zipDataStart); nothing here reads or inflates an entry.
import { ImageDecodeError, MAX_ZIP_DIRECTORY_BYTES, MAX_ZIP_ENTRIES } from "../../schema/image-formats/index.ts";
import { CENTRAL_HEADER, END, LOCAL_HEADER, U16_MAX, U32_MAX, ZIP64_END, ZIP64_LOCATOR } from "../../schema/zip-records.ts";
import type { Parse } from "./header-parse.ts";
import { inflateWithin } from "./inflate-bounded.ts";

export interface ZipEntry {
  /** 0 stored, 8 deflated. */
  method: number;
  compressedSize: number;
  size: number;
  /** Where the entry's local header starts. */
  localHeader: number;
}

/** The end record (22 bytes) and the longest comment after it. */
const TAIL_BYTES = 22 + U16_MAX;

const corrupt = (why: string) => new ImageDecodeError(`ZIP corrupt: ${why}`);

const view = (bytes: Uint8Array) => new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);

export function* readZipDirectory(size: number): Parse<Map<string, ZipEntry>> {
  const tailStart = Math.max(0, size - TAIL_BYTES);
  const tail = yield { offset: tailStart, length: size - tailStart, what: "the ZIP end record" };
  const t = view(tail);
  let end = -1;
  for (let at = tail.length - 22; at >= 0; at--) {
    if (t.getUint32(at, true) === END) {
      end = at;
      break;
    }
  }
  if (end < 0) throw corrupt("no end of central directory record");
  let entries = t.getUint16(end + 10, true);
  let directoryBytes = t.getUint32(end + 12, true);
  let directoryAt = t.getUint32(end + 16, true);
  if (entries === U16_MAX || directoryBytes === U32_MAX || directoryAt === U32_MAX) {
    // ZIP64: the locator just before the end record points at the ZIP64 end record.
    if (end < 20 || t.getUint32(end - 20, true) !== ZIP64_LOCATOR) throw corrupt("a ZIP64 archive without its locator");
    const record = view(yield { offset: Number(t.getBigUint64(end - 20 + 8, true)), length: 56, what: "the ZIP64 end record" });
    if (record.getUint32(0, true) !== ZIP64_END) throw corrupt("no ZIP64 end of central directory record");
    [entries, directoryBytes, directoryAt] = [32, 40, 48].map((field) => Number(record.getBigUint64(field, true))) as [number, number, number];
  }
  if (entries > MAX_ZIP_ENTRIES) {
    throw new ImageDecodeError(`ZIP archive of ${entries} entries, more than the ${MAX_ZIP_ENTRIES} an upload may hold`, "too-large");
  }
  if (directoryBytes > MAX_ZIP_DIRECTORY_BYTES) {
    throw new ImageDecodeError(`ZIP central directory of ${directoryBytes} bytes, more than the ${MAX_ZIP_DIRECTORY_BYTES} read`, "too-large");
  }
  if (directoryBytes < entries * 46 || directoryAt + directoryBytes > size)
    throw corrupt(`its central directory cannot hold ${entries} entries inside the file`);
  const directory = yield { offset: directoryAt, length: directoryBytes, what: "the ZIP central directory" };
  const d = view(directory);
  const found = new Map<string, ZipEntry>();
  const decoder = new TextDecoder();
  for (let at = 0, n = 0; n < entries; n++) {
    if (at + 46 > directory.length || d.getUint32(at, true) !== CENTRAL_HEADER) throw corrupt(`central directory entry ${n + 1} is damaged`);
    const [nameBytes, extraBytes, commentBytes] = [d.getUint16(at + 28, true), d.getUint16(at + 30, true), d.getUint16(at + 32, true)];
    if (at + 46 + nameBytes + extraBytes + commentBytes > directory.length) throw corrupt(`central directory entry ${n + 1} runs past the directory`);
    const name = decoder.decode(directory.subarray(at + 46, at + 46 + nameBytes));
    const entry: ZipEntry = {
      method: d.getUint16(at + 10, true),
      compressedSize: d.getUint32(at + 20, true),
      size: d.getUint32(at + 24, true),
      localHeader: d.getUint32(at + 42, true),
    };
    readZip64Extra(directory.subarray(at + 46 + nameBytes, at + 46 + nameBytes + extraBytes), entry);
    if (entry.localHeader + 30 + entry.compressedSize > size) throw corrupt(`entry ${name} lies past the end of the file`);
    found.set(name, entry);
    at += 46 + nameBytes + extraBytes + commentBytes;
  }
  return found;
}

/** ZIP64's extended information (header 0x0001): the 64-bit values of the fields that hold 0xFFFFFFFF, in their order. */
function readZip64Extra(extra: Uint8Array, entry: ZipEntry): void {
  const e = view(extra);
  for (let at = 0; at + 4 <= extra.length; ) {
    const [id, length] = [e.getUint16(at, true), e.getUint16(at + 2, true)];
    if (id === 0x0001) {
      let field = at + 4;
      const next = () => {
        if (field + 8 > at + 4 + length) throw corrupt("a ZIP64 extra field shorter than its entry needs");
        const value = Number(e.getBigUint64(field, true));
        field += 8;
        return value;
      };
      if (entry.size === U32_MAX) entry.size = next();
      if (entry.compressedSize === U32_MAX) entry.compressedSize = next();
      if (entry.localHeader === U32_MAX) entry.localHeader = next();
      return;
    }
    at += 4 + length;
  }
}

/** An entry's data as its file: stored (a copy), or deflated and inflated to at most `limit` bytes. */
export function inflateZipEntry(entry: ZipEntry, data: Uint8Array, limit: number, name: string): Uint8Array {
  if (entry.method === 0) return data.slice();
  if (entry.method !== 8)
    throw new ImageDecodeError(`ZIP compression method ${entry.method} (of ${name}) is not supported: store the archive, or deflate it`, "unsupported");
  if (entry.size > limit) throw new ImageDecodeError(`ZIP entry ${name} inflates to ${entry.size} bytes, more than the ${limit} it may hold`);
  const inflated = inflateWithin(data, limit, { framing: "raw", complete: true });
  if (inflated === "too large") throw new ImageDecodeError(`ZIP entry ${name} inflates past the ${limit} bytes it may hold: file corrupt or forged`);
  if (!(inflated instanceof Uint8Array)) throw new ImageDecodeError(`ZIP entry ${name} is corrupt: ${inflated.corrupt}`);
  return inflated;
}

/** Where an entry's data starts, from its local header's first 30 bytes. */
export function zipDataStart(entry: ZipEntry, localHeader: Uint8Array): number {
  const l = view(localHeader);
  if (localHeader.length < 30 || l.getUint32(0, true) !== LOCAL_HEADER) throw corrupt("an entry's local header is missing");
  return entry.localHeader + 30 + l.getUint16(26, true) + l.getUint16(28, true);
}
