// A JPEG TIFF's shared tables (schema/image-formats/jpeg-tables.ts): read once per page and reduced
// to the last definition of each table, so a block decodes as it would with the tables as written,
// and what goes in front of every block stays a few kilobytes however many segments the tag held.
import jpeg from "jpeg-js";
import { describe, expect, it } from "vitest";
import { decodeJpegTile } from "../../../common/decode/jpeg-tile.ts";
import { compactJpegTables, ImageDecodeError } from "../../../schema/image-formats/index.ts";

/** A 16x16 RGB JPEG split as a TIFF writer splits it: its DQT and DHT segments, and the rest (the abbreviated block). */
function splitJpeg(): { full: Uint8Array; tables: number[][]; block: Uint8Array } {
  const rgba = Uint8Array.from({ length: 16 * 16 * 4 }, (_, i) => (i % 4 === 3 ? 255 : (i * 37) % 256));
  const full = new Uint8Array(jpeg.encode({ width: 16, height: 16, data: rgba }, 90).data);
  const tables: number[][] = [];
  const kept: number[] = [0xff, 0xd8];
  let at = 2;
  while (full[at + 1] !== 0xda) {
    const end = at + 2 + ((full[at + 2]! << 8) | full[at + 3]!);
    if (full[at + 1] === 0xdb || full[at + 1] === 0xc4) tables.push([...full.subarray(at, end)]);
    else if (full[at + 1] !== 0xe0) kept.push(...full.subarray(at, end));
    at = end;
  }
  kept.push(...full.subarray(at));
  return { full, tables, block: new Uint8Array(kept) };
}

const shape = { what: "TIFF JPEG block", columns: 16, rows: 16, maxRows: 16, samples: 3, ycbcr: true };

describe("a JPEG TIFF page's shared tables", () => {
  it("keeps the last definition of each table: blocks decode as with the tables as written, from a stream no longer than one of each", () => {
    const { tables, block } = splitJpeg();
    const written = new Uint8Array([0xff, 0xd8, ...tables.flat(), 0xff, 0xd9]);
    // Forty stale definitions of the same tables first, a comment and an APP segment: all replaced or dropped.
    const stale = [
      ...[0, 1].map((id) => [0xff, 0xdb, 0, 67, id, ...new Array(64).fill(1)]),
      ...[0x00, 0x01, 0x10, 0x11].map((id) => [0xff, 0xc4, 0, 20, id, 1, ...new Array(15).fill(0), 0]),
    ];
    const padded = new Uint8Array([
      0xff,
      0xd8,
      ...Array.from({ length: 7 }, () => stale.flat()).flat(),
      0xff,
      0xfe,
      0,
      4,
      1,
      2,
      0xff,
      0xe1,
      0,
      2,
      ...tables.flat(),
      0xff,
      0xd9,
    ]);
    const compact = compactJpegTables(padded);
    expect(compact.length).toBeLessThanOrEqual(written.length);
    expect(decodeJpegTile(block, compact, shape)).toEqual(decodeJpegTile(block, compactJpegTables(written), shape));
    expect(compactJpegTables(padded)).toEqual(compactJpegTables(written));
  });

  it("keeps a restart interval, and refuses what a table stream may not hold", () => {
    const dri = [0xff, 0xdd, 0, 4, 0, 8];
    expect([...compactJpegTables([0xff, 0xd8, ...dri, 0xff, 0xd9])]).toEqual([0xff, 0xd8, ...dri]);
    for (const [bytes, why] of [
      [[0x00, 0xd8, 0xff, 0xd9], /does not start with SOI/],
      [[0xff, 0xd8, 0xff, 0xc0, 0, 2, 0xff, 0xd9], /marker 0xc0 has no place among tables/],
      [[0xff, 0xd8, 0xff, 0xdb, 0, 40, 0, 1], /overruns the tables/],
      [[0xff, 0xd8, 0xff, 0xdb, 0, 5, 0, 1, 2, 0xff, 0xd9], /quantisation table overruns its segment/],
      [[0xff, 0xd8, ...Array.from({ length: 65 }, () => [0xff, 0xfe, 0, 2]).flat()], /more than 64 marker segments/],
    ] as const) {
      expect(() => compactJpegTables(bytes as readonly number[] as number[]), String(why)).toThrow(ImageDecodeError);
      expect(() => compactJpegTables(bytes as readonly number[] as number[])).toThrow(why);
    }
  });
});
