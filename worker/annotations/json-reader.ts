// A JSON reader (RFC 8259) over bytes that builds nothing it is not asked for: the caller walks the
// document value by value, reads the few strings and numbers it needs, and skips the rest, which is
// checked for syntax but never allocated. JSON.parse would build the whole document first: tens of
// bytes of heap per coordinate, 545 MB for a 40 MiB file of positions, where a Worker isolate has
// 128 MB. Nesting is counted as it is read and refused past a depth, so the recursion of callers
// and of skipValue is bounded. The bytes must already be valid UTF-8 (checked by the caller), so
// only JSON's own grammar is checked here.

export class JsonSyntaxError extends Error {}
export class JsonDepthError extends Error {}

const QUOTE = 0x22,
  BACKSLASH = 0x5c,
  COMMA = 0x2c,
  COLON = 0x3a,
  OPEN_ARRAY = 0x5b,
  CLOSE_ARRAY = 0x5d,
  OPEN_OBJECT = 0x7b,
  CLOSE_OBJECT = 0x7d,
  MINUS = 0x2d;

/** Powers of ten a double holds exactly (10^22 is the largest). */
const EXACT_POWERS = Array.from({ length: 23 }, (_, i) => 10 ** i);

const latin1 = new TextDecoder("latin1");
const utf8 = new TextDecoder("utf-8");

export class JsonReader {
  private readonly bytes: Uint8Array;
  private readonly maxDepth: number;
  /** Next byte to read. */
  at = 0;
  private depth = 0;

  constructor(bytes: Uint8Array, maxDepth: number) {
    this.bytes = bytes;
    this.maxDepth = maxDepth;
    if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) this.at = 3; // a byte order mark
  }

  /** The next byte that is not whitespace (not consumed); -1 at the end. */
  peek(): number {
    const b = this.bytes;
    let i = this.at;
    while (i < b.length && (b[i] === 0x20 || b[i] === 0x0a || b[i] === 0x0d || b[i] === 0x09)) i++;
    this.at = i;
    return i < b.length ? b[i]! : -1;
  }

  /** Whether the next value starts with this byte ('[', '{', '"') or is a number. */
  startsArray(): boolean {
    return this.peek() === OPEN_ARRAY;
  }
  startsObject(): boolean {
    return this.peek() === OPEN_OBJECT;
  }
  startsString(): boolean {
    return this.peek() === QUOTE;
  }
  startsNumber(): boolean {
    const c = this.peek();
    return c === MINUS || (c >= 0x30 && c <= 0x39);
  }

  /** The first byte of the first value in the array that comes next (']' if it is empty), without reading anything; -1 if no array comes next. */
  firstInArray(): number {
    if (this.peek() !== OPEN_ARRAY) return -1;
    const saved = this.at;
    this.at++;
    const c = this.peek();
    this.at = saved;
    return c;
  }

  /** Whether the next value is an array whose first value is a number: [1, ... */
  arrayStartsWithNumber(): boolean {
    const c = this.firstInArray();
    return c === MINUS || (c >= 0x30 && c <= 0x39);
  }

  /** Whether the next value is an array whose first value is an array starting with a number: [[1, ... */
  arrayStartsWithPosition(): boolean {
    if (this.firstInArray() !== OPEN_ARRAY) return false;
    const saved = this.at;
    this.at++;
    const result = this.arrayStartsWithNumber();
    this.at = saved;
    return result;
  }

  /** Opens an array or object (the next byte must be `open`). */
  open(open: typeof OPEN_ARRAY | typeof OPEN_OBJECT): void {
    if (this.peek() !== open) this.unexpected();
    this.at++;
    if (++this.depth > this.maxDepth) throw new JsonDepthError(`nests deeper than ${this.maxDepth} levels`);
  }

  /**
   * Whether the open array or object has a member at index i (counted by the caller from 0):
   * consumes the comma before it, or the closing bracket after the last.
   */
  more(close: typeof CLOSE_ARRAY | typeof CLOSE_OBJECT, i: number): boolean {
    const c = this.peek();
    if (c === close) {
      this.at++;
      this.depth--;
      return false;
    }
    if (i === 0) return true;
    if (c !== COMMA) this.unexpected();
    this.at++;
    return true;
  }

  openArray(): void {
    this.open(OPEN_ARRAY);
  }
  openObject(): void {
    this.open(OPEN_OBJECT);
  }
  moreElements(i: number): boolean {
    return this.more(CLOSE_ARRAY, i);
  }
  moreMembers(i: number): boolean {
    return this.more(CLOSE_OBJECT, i);
  }

  /** An object member's name and the colon after it: decoded when at most `maxBytes` long in the file, else null. */
  key(maxBytes = 64): string | null {
    const name = this.string(maxBytes);
    if (this.peek() !== COLON) this.unexpected();
    this.at++;
    return name;
  }

  /** A string value, decoded when at most `maxBytes` long in the file (escapes included), else skipped and null. */
  string(maxBytes: number): string | null {
    if (this.peek() !== QUOTE) this.unexpected();
    const start = ++this.at;
    const b = this.bytes;
    let escapes = false;
    let i = start;
    for (;;) {
      if (i >= b.length) this.unexpected(i);
      const c = b[i]!;
      if (c === QUOTE) break;
      if (c < 0x20) this.unexpected(i);
      if (c === BACKSLASH) {
        escapes = true;
        const e = b[i + 1];
        if (e === 0x75) {
          for (let k = 2; k < 6; k++) if (!isHex(b[i + k])) this.unexpected(i + k);
          i += 6;
          continue;
        }
        if (!(e === QUOTE || e === BACKSLASH || e === 0x2f || e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74)) this.unexpected(i + 1);
        i += 2;
        continue;
      }
      i++;
    }
    this.at = i + 1;
    if (i - start > maxBytes) return null;
    return escapes ? unescaped(b.subarray(start, i)) : utf8.decode(b.subarray(start, i));
  }

  /** A number value, as JSON.parse would read it. */
  number(): number {
    if (!this.startsNumber()) this.unexpected();
    const b = this.bytes;
    const n = b.length;
    const start = this.at;
    let i = start;
    let c = b[i]!;
    const negative = c === MINUS;
    if (negative) c = ++i < n ? b[i]! : -1;
    let mantissa = 0;
    let significant = 0;
    let exponent = 0;
    // Integer part: 0, or a digit 1-9 and more digits.
    if (c === 0x30) c = ++i < n ? b[i]! : -1;
    else if (c > 0x30 && c <= 0x39) {
      do {
        if (significant < 16) mantissa = mantissa * 10 + (c - 0x30);
        else exponent++;
        significant++;
        c = ++i < n ? b[i]! : -1;
      } while (c >= 0x30 && c <= 0x39);
    } else this.unexpected(i);
    if (c === 0x2e) {
      c = ++i < n ? b[i]! : -1;
      if (!(c >= 0x30 && c <= 0x39)) this.unexpected(i);
      do {
        // Zeros before the first significant digit only move the decimal point.
        if (significant === 0 && c === 0x30) exponent--;
        else {
          if (significant < 16) {
            mantissa = mantissa * 10 + (c - 0x30);
            exponent--;
          }
          significant++;
        }
        c = ++i < n ? b[i]! : -1;
      } while (c >= 0x30 && c <= 0x39);
    }
    if (c === 0x65 || c === 0x45) {
      c = ++i < n ? b[i]! : -1;
      let sign = 1;
      if (c === 0x2b || c === MINUS) {
        if (c === MINUS) sign = -1;
        c = ++i < n ? b[i]! : -1;
      }
      if (!(c >= 0x30 && c <= 0x39)) this.unexpected(i);
      let e = 0;
      do {
        if (e < 100_000) e = e * 10 + (c - 0x30);
        c = ++i < n ? b[i]! : -1;
      } while (c >= 0x30 && c <= 0x39);
      exponent += sign * e;
    }
    this.at = i;
    // Clinger's fast path (1990): a mantissa of at most 15 digits and a power of ten up to 10^22
    // are both exact doubles, so one multiplication or division rounds correctly, as JSON.parse
    // does. Anything else goes to the platform's own conversion.
    if (significant <= 15 && exponent >= -22 && exponent <= 22) {
      const value = exponent >= 0 ? mantissa * EXACT_POWERS[exponent]! : mantissa / EXACT_POWERS[-exponent]!;
      return negative ? -value : value;
    }
    return Number(latin1.decode(b.subarray(start, i)));
  }

  /** The x and y of the last position(). */
  x = 0;
  y = 0;

  /**
   * A position [x, y] (two numbers, nothing else) into x and y, read in one go: the bulk of a
   * GeoJSON file. False, having read nothing, when the next value is anything else (the caller then
   * reads it value by value).
   */
  position(): boolean {
    if (this.peek() !== OPEN_ARRAY) return false;
    const start = this.at;
    this.at++;
    if (!this.startsNumber()) return this.rewind(start);
    this.x = this.number();
    if (this.peek() !== COMMA) return this.rewind(start);
    this.at++;
    if (!this.startsNumber()) return this.rewind(start);
    this.y = this.number();
    if (this.peek() !== CLOSE_ARRAY) return this.rewind(start);
    this.at++;
    // Nesting: the position is one level below the ring, which was checked when it was opened.
    if (this.depth + 1 > this.maxDepth) throw new JsonDepthError(`nests deeper than ${this.maxDepth} levels`);
    return true;
  }

  private rewind(at: number): false {
    this.at = at;
    return false;
  }

  /** Any value, checked for syntax and skipped; returns it when it is a number, a boolean or null (what a message may quote). */
  skipValue(): number | boolean | null | undefined {
    const c = this.peek();
    if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      const object = c === OPEN_OBJECT;
      this.open(c);
      for (let i = 0; this.more(object ? CLOSE_OBJECT : CLOSE_ARRAY, i); i++) {
        if (object) this.key(0);
        this.skipValue();
      }
      return undefined;
    }
    if (c === QUOTE) {
      this.string(0);
      return undefined;
    }
    if (c === MINUS || (c >= 0x30 && c <= 0x39)) return this.number();
    for (const [word, value] of LITERALS) {
      if (this.matches(word)) {
        this.at += word.length;
        return value;
      }
    }
    return this.unexpected();
  }

  /** Ends the document: nothing but whitespace may follow its value. */
  end(): void {
    if (this.peek() !== -1) this.unexpected();
  }

  private matches(word: string): boolean {
    for (let k = 0; k < word.length; k++) if (this.bytes[this.at + k] !== word.charCodeAt(k)) return false;
    return true;
  }

  unexpected(at = this.at): never {
    if (at >= this.bytes.length) throw new JsonSyntaxError("unexpected end of the file");
    const c = this.bytes[at]!;
    throw new JsonSyntaxError(
      `unexpected ${c >= 0x21 && c < 0x7f ? `'${String.fromCharCode(c)}'` : `byte 0x${c.toString(16).padStart(2, "0")}`} at byte ${at}`,
    );
  }
}

const LITERALS: [string, boolean | null][] = [
  ["true", true],
  ["false", false],
  ["null", null],
];

function isHex(c: number | undefined): boolean {
  return c !== undefined && ((c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66));
}

const ESCAPED: Record<number, string> = { 34: '"', 92: "\\", 47: "/", 98: "\b", 102: "\f", 110: "\n", 114: "\r", 116: "\t" };

/** A string's bytes (escapes already checked) as its text. */
function unescaped(raw: Uint8Array): string {
  let out = "";
  let from = 0;
  for (let i = 0; i < raw.length; ) {
    if (raw[i] !== BACKSLASH) {
      i++;
      continue;
    }
    out += utf8.decode(raw.subarray(from, i));
    const e = raw[i + 1]!;
    if (e === 0x75) {
      out += String.fromCharCode(Number.parseInt(latin1.decode(raw.subarray(i + 2, i + 6)), 16));
      i += 6;
    } else {
      out += ESCAPED[e]!;
      i += 2;
    }
    from = i;
  }
  return out + utf8.decode(raw.subarray(from));
}
