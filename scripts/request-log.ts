// `npm start`'s log without wrangler's line per request: with a runner long-polling for work, those
// were some 680 lines in 10 minutes that said nothing. What is left: wrangler's banner, warnings
// and errors, the worker's own console lines, and a request answered 5xx (a failure worth seeing).
// CELLSEG_LOG_REQUESTS=1 keeps every request line, as plain `wrangler dev` prints them.
import { Transform } from "node:stream";

// wrangler dev's request line: "[wrangler:info] POST /api/v1/internal/jobs/lease 204 No Content (20000ms)",
// possibly coloured (ANSI escapes) when it writes to a terminal.
const ANSI = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g");
const REQUEST = /^\[wrangler:info\] (?:GET|HEAD|POST|PUT|PATCH|DELETE|OPTIONS) \S+ (\d{3})\b/;

// Exported for its test only (test/scripts/request-log.test.ts).
/** Whether `line` is wrangler's log of a request that did not fail (below 500): what `npm start` leaves out. */
export function isQuietRequestLine(line: string): boolean {
  const match = REQUEST.exec(line.replace(ANSI, "").trim());
  return match !== null && Number(match[1]) < 500;
}

/** Passes text through line by line, leaving out the request lines isQuietRequestLine picks. */
export function withoutRequestLines(): Transform {
  let pending = "";
  return new Transform({
    transform(chunk, _encoding, done) {
      const lines = (pending + String(chunk)).split("\n");
      pending = lines.pop() ?? "";
      const kept = lines.filter((line) => !isQuietRequestLine(line));
      done(null, kept.length ? `${kept.join("\n")}\n` : undefined);
    },
    flush(done) {
      done(null, pending && !isQuietRequestLine(pending) ? pending : undefined);
    },
  });
}
