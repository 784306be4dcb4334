// A streaming ZIP writer (PKWARE APPNOTE 6.3): stored (uncompressed) entries whose CRC and size are
// known when they are added, so each local header is complete and no data descriptor is needed;
// the central directory follows the last entry, with ZIP64 end records when there are more than
// 65,535 entries or offsets pass 4 GiB.
//
// Why not fflate: its streaming `Zip` writes the end-of-central-directory counts as 16-bit fields
// and has no ZIP64 records (fflate 0.8 reads ZIP64 but does not write it), so a 100,000-ROI
// archive would be corrupt. Stored entries also suit .roi files: they are small and mostly
// distinct coordinates, so deflate would cost CPU for little gain.
//
// Memory: per entry the writer keeps CRC, size, offset and the UTF-8 name (about 60 bytes for a
// typical ROI), not the data, and emits the central directory in chunks.

import { ByteBuilder } from "../../common/roi-artifact/bytes.ts";
import { crc32 } from "../../common/crc32.ts";
import { CENTRAL_HEADER, END, LOCAL_HEADER, U16_MAX, U32_MAX, ZIP64_END, ZIP64_LOCATOR } from "../../schema/zip-records.ts";

const FLAG_UTF8_NAMES = 0x0800;
const VERSION_DEFAULT = 20;
const VERSION_ZIP64 = 45;
// Fixed timestamp (1980-01-01 00:00, the DOS epoch) so the same segmentation gives the same bytes.
const DOS_TIME = 0;
const DOS_DATE = (1 << 5) | 1;
const CENTRAL_DIRECTORY_CHUNK = 64 * 1024;
const RECORD_STRIDE = 4; // crc, size, local header offset, end of name in `names`

const utf8 = new TextEncoder();

export class StreamingZipWriter {
  private bytesWritten = 0;
  private count = 0;
  private records = new Float64Array(RECORD_STRIDE * 1024);
  private readonly names = new ByteBuilder(64 * 1024);

  get entryCount(): number {
    return this.count;
  }

  /** The bytes of one stored entry (local header, then data). */
  addStoredFile(name: string, data: Uint8Array): Uint8Array {
    if (data.length >= U32_MAX) throw new Error(`zip entry ${name} is too large for a stored entry`);
    const nameBytes = utf8.encode(name);
    if (nameBytes.length > U16_MAX) throw new Error("zip entry name too long");
    const crc = crc32(data);
    const out = new Uint8Array(30 + nameBytes.length + data.length);
    const v = new DataView(out.buffer);
    v.setUint32(0, LOCAL_HEADER, true);
    v.setUint16(4, VERSION_DEFAULT, true);
    v.setUint16(6, FLAG_UTF8_NAMES, true);
    v.setUint16(8, 0, true); // stored
    v.setUint16(10, DOS_TIME, true);
    v.setUint16(12, DOS_DATE, true);
    v.setUint32(14, crc, true);
    v.setUint32(18, data.length, true);
    v.setUint32(22, data.length, true);
    v.setUint16(26, nameBytes.length, true);
    v.setUint16(28, 0, true);
    out.set(nameBytes, 30);
    out.set(data, 30 + nameBytes.length);
    this.remember(crc, data.length, this.bytesWritten, nameBytes);
    this.bytesWritten += out.length;
    return out;
  }

  /** The central directory and end records, in chunks. */
  *finish(): Generator<Uint8Array> {
    const directoryOffset = this.bytesWritten;
    const out = new ByteBuilder(CENTRAL_DIRECTORY_CHUNK + 1024);
    let directorySize = 0;
    let nameStart = 0;
    for (let i = 0; i < this.count; i++) {
      // remember() stored RECORD_STRIDE values for each of the `count` entries.
      const r = RECORD_STRIDE * i;
      const crc = this.records[r]!;
      const size = this.records[r + 1]!;
      const offset = this.records[r + 2]!;
      const nameEnd = this.records[r + 3]!;
      const farOffset = offset >= U32_MAX;
      const before = out.length;
      out.u32(CENTRAL_HEADER);
      out.u16(farOffset ? VERSION_ZIP64 : VERSION_DEFAULT); // made by (MS-DOS attributes)
      out.u16(farOffset ? VERSION_ZIP64 : VERSION_DEFAULT); // needed
      out.u16(FLAG_UTF8_NAMES);
      out.u16(0);
      out.u16(DOS_TIME);
      out.u16(DOS_DATE);
      out.u32(crc);
      out.u32(size);
      out.u32(size);
      out.u16(nameEnd - nameStart);
      out.u16(farOffset ? 12 : 0); // extra field length
      out.u16(0); // comment length
      out.u16(0); // disk number
      out.u16(0); // internal attributes
      out.u32(0); // external attributes
      out.u32(farOffset ? U32_MAX : offset);
      out.raw(this.names.bytes.subarray(nameStart, nameEnd));
      if (farOffset) {
        out.u16(0x0001); // ZIP64 extended information
        out.u16(8);
        writeU64(out, offset);
      }
      directorySize += out.length - before;
      nameStart = nameEnd;
      if (out.length >= CENTRAL_DIRECTORY_CHUNK) {
        yield out.take();
        out.clear();
      }
    }
    const needsZip64 = this.count > U16_MAX - 1 || directoryOffset >= U32_MAX || directorySize >= U32_MAX;
    if (needsZip64) {
      const zip64EndOffset = directoryOffset + directorySize;
      out.u32(ZIP64_END);
      writeU64(out, 44); // size of the record after this field
      out.u16(VERSION_ZIP64);
      out.u16(VERSION_ZIP64);
      out.u32(0);
      out.u32(0);
      writeU64(out, this.count);
      writeU64(out, this.count);
      writeU64(out, directorySize);
      writeU64(out, directoryOffset);
      out.u32(ZIP64_LOCATOR);
      out.u32(0);
      writeU64(out, zip64EndOffset);
      out.u32(1);
    }
    out.u32(END);
    out.u16(0);
    out.u16(0);
    out.u16(needsZip64 ? U16_MAX : this.count);
    out.u16(needsZip64 ? U16_MAX : this.count);
    out.u32(Math.min(directorySize, U32_MAX));
    out.u32(Math.min(directoryOffset, U32_MAX));
    out.u16(0);
    yield out.take();
  }

  private remember(crc: number, size: number, offset: number, name: Uint8Array): void {
    if (RECORD_STRIDE * (this.count + 1) > this.records.length) {
      const grown = new Float64Array(this.records.length * 2);
      grown.set(this.records);
      this.records = grown;
    }
    this.names.raw(name);
    const r = RECORD_STRIDE * this.count;
    this.records[r] = crc;
    this.records[r + 1] = size;
    this.records[r + 2] = offset;
    this.records[r + 3] = this.names.length;
    this.count++;
  }
}

function writeU64(out: ByteBuilder, value: number): void {
  out.u32(value % 0x1_0000_0000);
  out.u32(Math.floor(value / 0x1_0000_0000));
}
