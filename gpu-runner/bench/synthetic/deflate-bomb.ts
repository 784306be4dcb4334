// A zlib stream (RFC 1950/1951) that inflates to `bytes` zero bytes from about 1/160 of that: one
// fixed-Huffman block holding a literal 0 and then back-references of length 258 at distance 1.
// Written bit by bit so that making a 1 GiB bomb costs ~7 MB, never the gigabyte itself.

export function deflateBomb(bytes: number): Uint8Array {
  const repeats = Math.ceil((bytes - 1) / 258);
  const out = new Uint8Array(2 + Math.ceil((3 + 8 + 13 * repeats + 7) / 8) + 4);
  out[0] = 0x78; // CMF: deflate, 32 KiB window
  out[1] = 0x01; // FLG: no dictionary, fastest; (0x78 << 8 | 0x01) % 31 === 0
  let bitPos = 16;
  // Deflate packs fields least significant bit first; Huffman codes go most significant bit first.
  const bits = (value: number, count: number) => {
    for (let i = 0; i < count; i++, bitPos++) if ((value >> i) & 1) out[bitPos >> 3]! |= 1 << (bitPos & 7);
  };
  const code = (value: number, count: number) => {
    for (let i = count - 1; i >= 0; i--, bitPos++) if ((value >> i) & 1) out[bitPos >> 3]! |= 1 << (bitPos & 7);
  };
  bits(1, 1); // BFINAL
  bits(1, 2); // BTYPE 01: fixed Huffman codes
  code(0b00110000, 8); // literal 0
  for (let i = 0; i < repeats; i++) {
    code(0b11000101, 8); // length code 285: 258 bytes
    code(0, 5); // distance code 0: distance 1
  }
  code(0, 7); // end of block (256)
  return out; // the Adler-32 is left zero: a reader that stops at its limit never gets that far
}
