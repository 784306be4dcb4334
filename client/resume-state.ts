// What a `segment` run has done, kept in <out>/.cellseg-state.json so that a run interrupted and
// started again with the same --out picks up where it stopped: the image ids it uploaded (and the
// parts of an unfinished resumable upload), the prediction ids it submitted, the exports on disk.
// Written after every step, atomically (a temporary file renamed over the old one), so a kill at
// any moment leaves the previous state or the next, never half of one.
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ExportFormat } from "./exports.ts";

export const STATE_FILE = ".cellseg-state.json";

export interface ImageProgress {
  /** The local file as it was when uploaded: a file changed since is uploaded again. */
  size: number;
  mtime_ms: number;
  /** Folder under --out holding this image's exports. */
  folder: string;
  image_id?: string;
  parts_done?: number[];
  /** Model and parameters the prediction was asked with: other ones mean a new prediction. */
  request?: string;
  /** With `--model auto`: the model chosen for this image, and why (client/model-choice.ts). */
  model_id?: string;
  model_reason?: string;
  prediction_id?: string;
  segmentation_id?: string;
  cell_count?: number;
  /** A prediction made block by block: its blocks and how many were glass (the summary says so). */
  blocks?: { total: number; glass: number };
  /** Exports on disk: `true`, or the `--columns` a CSV or GeoJSON was saved with (client/exports.ts, exportMark). */
  exports?: Partial<Record<ExportFormat, true | string>>;
}

interface StateFile {
  version: 1;
  api: string;
  /** Keyed by the file's absolute path. */
  images: Record<string, ImageProgress>;
}

export class ResumeState {
  private readonly path: string;
  private state: StateFile;

  /** Reads the state of a previous run against the same API, if any. */
  constructor(outDir: string, api: string) {
    this.path = join(outDir, STATE_FILE);
    const previous = existsSync(this.path) ? ResumeState.read(this.path) : null;
    // Ids from another service mean nothing here.
    this.state = previous?.version === 1 && previous.api === api ? previous : { version: 1, api, images: {} };
  }

  private static read(path: string): StateFile {
    try {
      return JSON.parse(readFileSync(path, "utf8")) as StateFile;
    } catch {
      throw new Error(`${path} is not a state file this client can read; move it away to start over`);
    }
  }

  get(file: string): ImageProgress | undefined {
    return this.state.images[file];
  }

  set(file: string, progress: ImageProgress): void {
    this.state.images[file] = progress;
    this.save();
  }

  update(file: string, patch: Partial<ImageProgress>): ImageProgress {
    const next = { ...this.state.images[file]!, ...patch };
    this.set(file, next);
    return next;
  }

  private save(): void {
    const temporary = `${this.path}.${process.pid}.tmp`;
    writeFileSync(temporary, JSON.stringify(this.state, null, 1));
    renameSync(temporary, this.path);
  }
}
