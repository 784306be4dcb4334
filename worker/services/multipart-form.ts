// A streaming multipart/form-data reader (RFC 7578). The usual parsers buffer each part whole;
// an uploaded image may be hundreds of megabytes and a Worker has 128 MB, so this one yields a
// part's body as it arrives and keeps only a boundary's length of bytes between chunks. What it
// has read is dropped by taking views (subarray), never copies, so a body of many small parts
// costs its length, not its length times its parts. Every route that takes a form reads it here,
// and every refusal is the one 400 below.

import { HttpError } from "../errors.ts";

type MultipartEvent =
  | { type: "part"; name: string | null; filename: string | null; contentType: string | null }
  | { type: "data"; bytes: Uint8Array }
  | { type: "end" };

/** A body or Content-Type this reader cannot read: answered 400 wherever it is thrown. */
class MultipartError extends HttpError {
  constructor(problem: string) {
    super(400, `Malformed multipart body: ${problem}`);
  }
}

const MAX_HEADER_BYTES = 16 * 1024;
const CRLF = new Uint8Array([13, 10]);

/**
 * The boundary of a multipart/form-data Content-Type; null when the type is another. A multipart
 * type without a usable boundary (RFC 2046: 1 to 70 characters) is a malformed header.
 */
export function boundaryOf(contentType: string | null): string | null {
  if (!contentType || !/^multipart\/form-data\b/i.test(contentType)) return null;
  const match = /;\s*boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  const boundary = match ? (match[1] ?? match[2]) : null;
  if (!boundary) throw new MultipartError("Content-Type multipart/form-data has no boundary");
  if (boundary.length > 70) throw new MultipartError("the multipart boundary is longer than 70 characters");
  return boundary;
}

function indexOf(haystack: Uint8Array, needle: Uint8Array, from: number): number {
  const first = needle[0];
  const last = haystack.length - needle.length;
  outer: for (let i = from; i <= last; i++) {
    if (haystack[i] !== first) continue;
    for (let j = 1; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (a.length === 0) return b;
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}

function parseDisposition(headerBlock: string) {
  let name: string | null = null;
  let filename: string | null = null;
  let contentType: string | null = null;
  for (const line of headerBlock.split("\r\n")) {
    const colon = line.indexOf(":");
    if (colon < 0) continue;
    const key = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (key === "content-type") contentType = value;
    if (key !== "content-disposition") continue;
    // filename* (RFC 5987) wins over the plain filename when both are present.
    const star = /filename\*\s*=\s*([^;]*)/.exec(value)?.[1];
    const plain = /filename\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;]+))/.exec(value);
    const field = /(?:^|;)\s*name\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;]+))/.exec(value);
    if (field) name = quotedOrBare(field);
    if (star !== undefined) filename = extendedValue(star.trim());
    else if (plain) filename = quotedOrBare(plain).trim();
  }
  return { name, filename, contentType };
}

/** A parameter matched as "quoted" (group 1, backslash escapes undone) or bare (group 2): exactly one group takes part. */
function quotedOrBare(match: RegExpExecArray): string {
  return (match[1] ?? match[2])!.replace(/\\(.)/g, "$1");
}

/** Decodes an RFC 5987 ext-value, charset'language'percent-encoded-bytes (UTF-8 or ISO-8859-1). */
function extendedValue(text: string): string {
  const [, charsetName, encoded] = /^([A-Za-z0-9!#$%&+^_`{}~-]+)'[^']*'(.*)$/.exec(text) ?? [];
  const charset = charsetName?.toLowerCase();
  if (encoded === undefined || (charset !== "utf-8" && charset !== "iso-8859-1")) {
    throw new MultipartError("Content-Disposition filename* must be UTF-8''<percent-encoded name> (RFC 5987)");
  }
  if (!/^(?:[A-Za-z0-9!#$&+.^_`|~-]|%[0-9A-Fa-f]{2})*$/.test(encoded)) {
    throw new MultipartError("Content-Disposition filename* holds a character that must be percent-encoded, or a broken %-escape");
  }
  if (charset === "iso-8859-1") return encoded.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
  try {
    return decodeURIComponent(encoded);
  } catch {
    throw new MultipartError("Content-Disposition filename* is not valid percent-encoded UTF-8");
  }
}

const HEADERS_END = new TextEncoder().encode("\r\n\r\n");

/**
 * Yields part headers, then the part's bytes in chunks, then "end", for each part in order. A
 * second part named one of `once` is refused (400) as its headers arrive: a route reads such a
 * part whole, or stores it, so a repeat would have it do that work again for each.
 */
export async function* readMultipart(body: ReadableStream<Uint8Array>, boundary: string, once: readonly string[] = []): AsyncGenerator<MultipartEvent> {
  const encoder = new TextEncoder();
  // Every delimiter is CRLF "--" boundary; pretending the body starts with CRLF makes the first one alike.
  const delimiter = encoder.encode(`\r\n--${boundary}`);
  const seen = new Set<string>();
  const reader = body.getReader();
  let buffer: Uint8Array = CRLF;
  let state: "preamble" | "headers" | "body" | "done" = "preamble";
  let streamEnded = false;

  const pull = async (): Promise<boolean> => {
    if (streamEnded) return false;
    const { value, done } = await reader.read();
    if (done) {
      streamEnded = true;
      return false;
    }
    buffer = concat(buffer, value);
    return true;
  };

  try {
    while (state !== "done") {
      if (state === "preamble") {
        const at = indexOf(buffer, delimiter, 0);
        if (at < 0) {
          buffer = buffer.subarray(Math.max(0, buffer.length - delimiter.length));
          if (!(await pull())) throw new MultipartError("multipart body has no boundary line");
          continue;
        }
        buffer = buffer.subarray(at + delimiter.length);
        state = "headers";
      } else if (state === "headers") {
        // After a delimiter: "--" ends the body, CRLF starts a part's headers.
        while (buffer.length < 2) if (!(await pull())) throw new MultipartError("multipart body ends inside a boundary line");
        if (buffer[0] === 45 && buffer[1] === 45) {
          state = "done";
          continue;
        }
        const end = indexOf(buffer, HEADERS_END, 0);
        if (end < 0) {
          if (buffer.length > MAX_HEADER_BYTES) throw new MultipartError("multipart part headers are too long");
          if (!(await pull())) throw new MultipartError("multipart body ends inside part headers");
          continue;
        }
        const headerBlock = new TextDecoder().decode(buffer.subarray(0, end)).replace(/^[ \t]*\r\n/, "");
        buffer = buffer.subarray(end + 4);
        const part = parseDisposition(headerBlock);
        if (part.name !== null && once.includes(part.name)) {
          if (seen.has(part.name)) throw new HttpError(400, `The multipart body has a second part named '${part.name}'; send one`);
          seen.add(part.name);
        }
        yield { type: "part", ...part };
        state = "body";
      } else {
        const at = indexOf(buffer, delimiter, 0);
        if (at >= 0) {
          if (at > 0) yield { type: "data", bytes: buffer.subarray(0, at) };
          buffer = buffer.subarray(at + delimiter.length);
          yield { type: "end" };
          state = "headers";
          continue;
        }
        // Everything but a possible partial delimiter at the tail is part data.
        const safe = buffer.length - (delimiter.length - 1);
        if (safe > 0) {
          yield { type: "data", bytes: buffer.subarray(0, safe) };
          buffer = buffer.subarray(safe);
        }
        if (!(await pull())) throw new MultipartError("multipart body ends before its closing boundary");
      }
    }
  } finally {
    reader.releaseLock();
  }
}
