// CRC-32 (ISO-HDLC: polynomial 0xEDB88320 reflected, init and final xor 0xFFFFFFFF), the checksum
// that the ROI artifact, ZIP and PNG all use. Kept incremental so streams never need the whole
// payload: pass the previous result back in as `crc`.

const TABLE = buildTable();

function buildTable(): Uint32Array {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
}

/** CRC-32 of `bytes`, continuing from `crc` (the result of an earlier call, or 0 to start). */
export function crc32(bytes: Uint8Array, crc = 0): number {
  let c = ~crc >>> 0;
  // The table has 256 entries, so an index masked with 0xff is always in it.
  for (const byte of bytes) c = TABLE[(c ^ byte) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}
