// Walks a ZIP of stored entries as it streams in, handing each entry to `onEntry` and keeping only
// the current entry plus the last 64 KiB (for the end records), so a 100k-entry archive is checked
// without holding it. Written from PKWARE's APPNOTE for the tests.

import { crc32 } from "../../../../common/crc32.ts";

export interface ZipWalk {
  entries: number;
  totalBytes: number;
  /** The last 64 KiB of the file (or all of it when smaller). */
  tail: Uint8Array;
}

export async function walkStoredZip(stream: ReadableStream<Uint8Array>, onEntry: (name: string, data: Uint8Array) => void): Promise<ZipWalk> {
  let pending = new Uint8Array(0);
  let tail = new Uint8Array(0);
  let totalBytes = 0;
  let entries = 0;
  let inCentralDirectory = false;
  const utf8 = new TextDecoder();
  for await (const chunk of stream) {
    totalBytes += chunk.length;
    const joinedTail = new Uint8Array(tail.length + chunk.length);
    joinedTail.set(tail);
    joinedTail.set(chunk, tail.length);
    tail = joinedTail.slice(Math.max(0, joinedTail.length - 65536));
    if (inCentralDirectory) continue;
    const joined = new Uint8Array(pending.length + chunk.length);
    joined.set(pending);
    joined.set(chunk, pending.length);
    let at = 0;
    for (;;) {
      if (joined.length - at < 4) break;
      const view = new DataView(joined.buffer, at);
      const signature = view.getUint32(0, true);
      if (signature !== 0x04034b50) {
        inCentralDirectory = true;
        break;
      }
      if (joined.length - at < 30) break;
      const size = view.getUint32(18, true);
      const nameLength = view.getUint16(26, true);
      const extraLength = view.getUint16(28, true);
      const end = at + 30 + nameLength + extraLength + size;
      if (joined.length < end) break;
      if (view.getUint16(8, true) !== 0) throw new Error("entry is not stored");
      const name = utf8.decode(joined.subarray(at + 30, at + 30 + nameLength));
      const data = joined.subarray(end - size, end);
      if (crc32(data) !== view.getUint32(14, true)) throw new Error(`CRC mismatch in ${name}`);
      onEntry(name, data);
      entries++;
      at = end;
    }
    pending = joined.slice(at);
  }
  return { entries, totalBytes, tail };
}

export interface ZipEnd {
  entries: number;
  directoryOffset: number;
  directorySize: number;
  zip64: boolean;
}

/** Reads the end-of-central-directory record and, when present, the ZIP64 one it points to. */
export function readZipEnd(tail: Uint8Array, totalBytes: number): ZipEnd {
  const view = new DataView(tail.buffer, tail.byteOffset, tail.byteLength);
  const eocd = tail.length - 22;
  if (view.getUint32(eocd, true) !== 0x06054b50) throw new Error("no end of central directory record");
  const count16 = view.getUint16(eocd + 10, true);
  if (count16 !== 0xffff) {
    return { entries: count16, directorySize: view.getUint32(eocd + 12, true), directoryOffset: view.getUint32(eocd + 16, true), zip64: false };
  }
  const locator = eocd - 20;
  if (view.getUint32(locator, true) !== 0x07064b50) throw new Error("no ZIP64 locator");
  const recordOffset = Number(view.getBigUint64(locator + 8, true));
  const record = recordOffset - (totalBytes - tail.length);
  if (view.getUint32(record, true) !== 0x06064b50) throw new Error("no ZIP64 end record where the locator points");
  return {
    entries: Number(view.getBigUint64(record + 32, true)),
    directorySize: Number(view.getBigUint64(record + 40, true)),
    directoryOffset: Number(view.getBigUint64(record + 48, true)),
    zip64: true,
  };
}
