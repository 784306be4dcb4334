// Progress for people and for logs. On a terminal: one bar per thing in flight (bytes of an upload,
// progress of a prediction) under an overall count of images, redrawn in place. Elsewhere (CI, a
// file, a pipe): plain lines, one when something starts, changes stage or ends, and at each quarter
// (a block-wise prediction's blocks done show on those lines, not on one line per block).
import { formatBytes } from "./format.ts";

interface Bar {
  /**
   * `done` out of the bar's total; `note` says what is happening (a stage, a wait); `detail` adds
   * what changes often within it (blocks done of all): shown after the note, it never makes a
   * plain line of its own.
   */
  update(done: number, note?: string, detail?: string): void;
  /** Takes the bar away, leaving `message` as a line of its own. */
  finish(message: string): void;
}

export interface Display {
  log(message: string): void;
  bar(label: string, total: number, unit: "bytes" | "fraction"): Bar;
  /** The overall count shown above the bars. */
  count(done: number, total: number): void;
  close(): void;
}

const WIDTH = 24;

function amount(done: number, total: number, unit: "bytes" | "fraction"): string {
  return unit === "bytes" ? `${formatBytes(done)} / ${formatBytes(total)}` : `${Math.round((done / (total || 1)) * 100)}%`;
}

const joined = (note: string, detail: string) => (note && detail ? `${note} ${detail}` : note || detail);

interface Row {
  label: string;
  total: number;
  unit: "bytes" | "fraction";
  done: number;
  note: string;
  detail: string;
}

class TerminalDisplay implements Display {
  private readonly out: NodeJS.WriteStream;
  private readonly rows = new Set<Row>();
  private overall = "";
  private drawn = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(out: NodeJS.WriteStream) {
    this.out = out;
  }

  log(message: string): void {
    this.clear();
    this.out.write(`${message}\n`);
    this.draw();
  }

  bar(label: string, total: number, unit: "bytes" | "fraction"): Bar {
    const row: Row = { label, total, unit, done: 0, note: "", detail: "" };
    this.rows.add(row);
    this.schedule();
    return {
      update: (done, note, detail) => {
        row.done = done;
        if (note !== undefined) {
          row.note = note;
          row.detail = detail ?? "";
        }
        this.schedule();
      },
      finish: (message) => {
        this.rows.delete(row);
        this.log(message);
      },
    };
  }

  count(done: number, total: number): void {
    this.overall = `images ${done}/${total}`;
    this.schedule();
  }

  close(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.clear();
  }

  // Redraws at most ten times a second: a fast upload reports thousands of chunks.
  private schedule(): void {
    this.timer ??= setTimeout(() => {
      this.timer = null;
      this.clear();
      this.draw();
    }, 100);
  }

  private clear(): void {
    if (this.drawn > 0) this.out.write(`\x1b[${this.drawn}A\x1b[0J`);
    this.drawn = 0;
  }

  private draw(): void {
    const columns = this.out.columns || 100;
    const lines = this.overall ? [this.overall] : [];
    for (const row of this.rows) {
      const filled = Math.round(Math.min(1, row.done / (row.total || 1)) * WIDTH);
      lines.push(
        `  ${row.label} [${"#".repeat(filled)}${"-".repeat(WIDTH - filled)}] ${amount(row.done, row.total, row.unit)} ${joined(row.note, row.detail)}`,
      );
    }
    for (const line of lines) this.out.write(`${line.slice(0, columns - 1)}\n`);
    this.drawn = lines.length;
  }
}

class PlainDisplay implements Display {
  private readonly out: NodeJS.WritableStream;

  constructor(out: NodeJS.WritableStream) {
    this.out = out;
  }

  log(message: string): void {
    this.out.write(`${message}\n`);
  }

  bar(label: string, total: number, unit: "bytes" | "fraction"): Bar {
    let quarter = -1;
    let lastNote = "";
    return {
      update: (done, note, detail) => {
        const reached = Math.floor((done / (total || 1)) * 4);
        const noteChanged = note !== undefined && note !== lastNote;
        const said = joined(note ?? "", detail ?? "");
        if (reached > quarter || noteChanged) this.log(`${label}: ${amount(done, total, unit)}${said ? ` ${said}` : ""}`);
        quarter = Math.max(quarter, reached);
        if (note !== undefined) lastNote = note;
      },
      finish: (message) => this.log(message),
    };
  }

  count(): void {
    // Each image's own lines say enough; the summary gives the totals.
  }

  close(): void {}
}

export function createDisplay(out: NodeJS.WriteStream | NodeJS.WritableStream): Display {
  return "isTTY" in out && out.isTTY ? new TerminalDisplay(out as NodeJS.WriteStream) : new PlainDisplay(out);
}
