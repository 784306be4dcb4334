// Reads a ZIP archive's entries (PKWARE APPNOTE 6.3) from its central directory, which holds every
// entry's sizes even where the local headers defer them to data descriptors (Java's ZipOutputStream,
// and so Fiji's ROI Manager, writes those). ZIP64 end records are followed, so the project's own
// archives of more than 65,535 ROIs (worker/exports/zip-writer.ts) read back. Why not fflate's
// unzipSync: it inflates each entry to the size the archive claims without stopping, so a small
// archive could make the worker inflate gigabytes; here each entry inflates through `inflateWithin`.
// Nor does anything stop a central directory from listing one local header many times: the
// inflated-size caps bound the output, not the input read to produce it (deflate data can be empty
// blocks, 5 bytes each, that inflate to nothing), so entries must lie apart in the file, each
// entry's deflate data may be only as long as the stored form of the most it may inflate to, and
// the bytes read for all entries together are then at most the file.

import { inflateWithin } from "../../common/decode/inflate-bounded.ts";
import { AnnotationImportError } from "./errors.ts";
import { CENTRAL_HEADER, END, LOCAL_HEADER, U32_MAX, ZIP64_END, ZIP64_LOCATOR } from "../../schema/zip-records.ts";

interface ZipEntry {
  name: string;
  /** 0 stored, 8 deflated. */
  method: number;
  compressedSize: number;
  /** Size the archive claims for the inflated data (untrusted). */
  size: number;
  /** Where its local header starts; the entry runs from there to dataOffset + compressedSize. */
  localOffset: number;
  dataOffset: number;
}

export function isZip(bytes: Uint8Array): boolean {
  return bytes.length >= 4 && bytes[0] === 0x50 && bytes[1] === 0x4b && ((bytes[2] === 3 && bytes[3] === 4) || (bytes[2] === 5 && bytes[3] === 6));
}

function corrupt(why: string): AnnotationImportError {
  return new AnnotationImportError("unreadable", `ZIP archive unreadable: ${why}`);
}

/** The entries in central-directory order; refuses archives with more than `maxEntries`. */
export function zipEntries(bytes: Uint8Array, maxEntries: number): ZipEntry[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let end = -1;
  for (let at = bytes.length - 22; at >= Math.max(0, bytes.length - 22 - 0xffff); at--) {
    if (view.getUint32(at, true) === END) {
      end = at;
      break;
    }
  }
  if (end < 0) throw corrupt("no end-of-central-directory record (truncated?)");
  let total = view.getUint16(end + 10, true);
  let directory = view.getUint32(end + 16, true);
  const locator = end - 20;
  if (locator >= 0 && view.getUint32(locator, true) === ZIP64_LOCATOR) {
    const record = Number(view.getBigUint64(locator + 8, true));
    if (record + 56 > bytes.length || view.getUint32(record, true) !== ZIP64_END) throw corrupt("broken ZIP64 end record");
    total = Number(view.getBigUint64(record + 32, true));
    directory = Number(view.getBigUint64(record + 48, true));
  }
  if (total > maxEntries) {
    throw new AnnotationImportError(
      "too_many_objects",
      `the archive holds ${total.toLocaleString("en-US")} entries; one import may hold at most ${maxEntries.toLocaleString("en-US")}`,
    );
  }
  const names = new TextDecoder();
  const entries: ZipEntry[] = [];
  let at = directory;
  for (let i = 0; i < total; i++) {
    if (at + 46 > bytes.length || view.getUint32(at, true) !== CENTRAL_HEADER) throw corrupt(`central directory entry ${i + 1} is missing`);
    const flags = view.getUint16(at + 8, true);
    const method = view.getUint16(at + 10, true);
    const compressedSize = view.getUint32(at + 20, true);
    const size = view.getUint32(at + 24, true);
    const nameLength = view.getUint16(at + 28, true);
    const skip = nameLength + view.getUint16(at + 30, true) + view.getUint16(at + 32, true);
    const local = view.getUint32(at + 42, true);
    if (at + 46 + nameLength > bytes.length) throw corrupt(`central directory entry ${i + 1} is cut short`);
    const name = names.decode(bytes.subarray(at + 46, at + 46 + nameLength));
    if (flags & 1) throw corrupt(`${name} is encrypted`);
    if (compressedSize === U32_MAX || size === U32_MAX || local === U32_MAX) throw corrupt(`${name} has ZIP64 sizes, which an annotation never needs`);
    if (local + 30 > bytes.length || view.getUint32(local, true) !== LOCAL_HEADER) throw corrupt(`${name} has no local header`);
    const dataOffset = local + 30 + view.getUint16(local + 26, true) + view.getUint16(local + 28, true);
    if (dataOffset + compressedSize > bytes.length) throw corrupt(`${name} runs past the end of the archive`);
    entries.push({ name, method, compressedSize, size, localOffset: local, dataOffset });
    at += 46 + skip;
  }
  checkApart(entries);
  return entries;
}

/** Refuses entries that share bytes: every entry of a real archive has a local header and data of its own. */
function checkApart(entries: readonly ZipEntry[]): void {
  const order = entries.map((_, i) => i).sort((a, b) => entries[a]!.localOffset - entries[b]!.localOffset);
  for (let k = 1; k < order.length; k++) {
    const before = entries[order[k - 1]!]!,
      after = entries[order[k]!]!;
    if (after.localOffset < before.dataOffset + before.compressedSize) {
      throw corrupt(
        `entries ${before.name} and ${after.name} share bytes (at ${after.localOffset}); each entry of an archive has a header and data of its own`,
      );
    }
  }
}

/**
 * The longest deflate data that inflates to at most `bytes` without padding: its stored form, the
 * data plus 5 bytes per stored block of up to 65,535 bytes (RFC 1951, 3.2.4), and 1 KiB for an
 * encoder's final empty block or flush markers.
 */
function maxDeflatedBytes(bytes: number): number {
  return bytes + 5 * Math.ceil(bytes / 65_535) + 1024;
}

/** An entry's data, inflated to at most `limit` bytes (more is an error, found before it is all inflated). */
export function entryData(bytes: Uint8Array, entry: ZipEntry, limit: number): Uint8Array {
  const stored = bytes.subarray(entry.dataOffset, entry.dataOffset + entry.compressedSize);
  if (entry.method === 0) {
    if (stored.length > limit) throw tooLarge(entry, limit);
    return stored;
  }
  if (entry.method !== 8) throw corrupt(`${entry.name} uses compression method ${entry.method} (only stored and deflated entries are read)`);
  if (stored.length > maxDeflatedBytes(limit)) {
    throw new AnnotationImportError(
      "limit_exceeded",
      `${entry.name} holds ${stored.length.toLocaleString("en-US")} bytes of deflate data; an entry that inflates to at most ${limit.toLocaleString("en-US")} bytes needs at most ${maxDeflatedBytes(limit).toLocaleString("en-US")}`,
    );
  }
  const inflated = inflateWithin(stored, limit, { framing: "raw", complete: true });
  if (inflated === "too large") throw tooLarge(entry, limit);
  if (!(inflated instanceof Uint8Array)) throw corrupt(`${entry.name} is not valid deflate data`);
  return inflated;
}

function tooLarge(entry: ZipEntry, limit: number): AnnotationImportError {
  return new AnnotationImportError("limit_exceeded", `${entry.name} inflates to more than ${limit.toLocaleString("en-US")} bytes, more than any ROI needs`);
}
