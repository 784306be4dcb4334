// `segment`'s work: every image uploaded, segmented and exported, in three lanes that overlap.
// Uploads go one after another and run ahead; predictions go one at a time (the organization's
// rule) in upload order; each finished segmentation's exports download while the next prediction
// runs. Every step is recorded in the resume state, and a step already recorded is checked against
// the service (the image, prediction or segmentation may have been deleted since) before it is
// trusted.
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import type { PredictionRecord } from "../schema/api-records.ts";
import { downloadExport, type ExportChoice, type ExportFormat, exportFile, exportMark } from "./exports.ts";
import { ApiError, type Http } from "./http.ts";
import { OverlaySkipped, overlayFile, writeOverlay } from "./overlay.ts";
import type { InputFile } from "./inputs.ts";
import { InterruptedError, Interruption } from "./interruption.ts";
import { type Blocks, blocksSummary, pollPrediction, predictionNote, submitWhenFree, type WaitOptions } from "./predict.ts";
import type { Display } from "./progress.ts";
import { type ImageProgress, ResumeState } from "./resume-state.ts";
import { formatPixelSize } from "./format.ts";
import { uploadImage } from "./upload.ts";
import { AUTO_MODEL, chooseModelForFile } from "./model-choice.ts";
import type { ModelRecord } from "../schema/api-records.ts";

export interface SegmentOptions {
  inputs: InputFile[];
  out: string;
  /** A model id, or "auto": each image's recommended public model (client/model-choice.ts), chosen from `models`. */
  modelId: string;
  models?: ModelRecord[];
  params: Record<string, unknown>;
  formats: ExportFormat[];
  /** Measurement columns and groups for measurements.csv and rois.geojson; empty: the service's default. */
  columns?: string[];
  /** rois.geojson as QuPath cell objects (needs a cell expansion in the params). */
  cellObjects?: boolean;
  resumableAbove: number;
  bodyLimit: number;
  wait: WaitOptions;
  /** Write <name>-overlay.png beside the exports (needs the geojson export among `formats`). */
  overlay?: boolean;
  /** Ctrl-C: start nothing new, let what is in flight finish. */
  interruption?: Interruption;
}

export interface ImageOutcome {
  input: InputFile;
  ok: boolean;
  /** Nothing left to do: a previous run finished this image. */
  alreadyDone: boolean;
  /** Stopped by an interruption before it was done; a rerun carries on. */
  interrupted: boolean;
  /** The service's id of the uploaded image (what `import` and `train` take); null if none yet. */
  imageId: string | null;
  cellCount: number | null;
  /** A whole slide segmented block by block: its blocks, and how many were glass; null for one pass. */
  blocks: Pick<Blocks, "total" | "glass"> | null;
  /** Where it failed and why. */
  error: string | null;
  /** Something to know about a success (the overlay skipped for a huge image). */
  note?: string;
  /**
   * Time spent on this image alone: its upload, its prediction from submission to result, its
   * exports. Not the wait for the uploads before it or for the organization's one prediction slot,
   * which would make each image's time the sum of those before it.
   */
  ms: number;
}

/** The image as the prediction lane receives it: uploaded, or already past that. */
type Prepared = { progress: ImageProgress } | { failed: string } | { interrupted: true };

const message = (error: unknown) => (error instanceof ApiError ? `${error.status} ${error.detail}` : (error as Error).message);

const gone = (error: unknown) => error instanceof ApiError && error.status === 404;

async function exists(http: Http, path: string): Promise<boolean> {
  try {
    await http.request("GET", path);
    return true;
  } catch (error) {
    if (gone(error)) return false;
    throw error;
  }
}

export async function runSegment(http: Http, options: SegmentOptions, display: Display): Promise<ImageOutcome[]> {
  return new SegmentRun(http, options, display).run();
}

/** The lanes and their steps for one run over the inputs: each step a method, the run's state in fields. */
class SegmentRun {
  private readonly interruption: Interruption;
  private readonly wait: WaitOptions & { checkpoint: () => void; signal: AbortSignal };
  private readonly state: ResumeState;
  /** The request every image's prediction makes; a recorded step made for another is redone. */
  private readonly request: string;
  private readonly choice: ExportChoice;
  /** Each image's own time so far (ImageOutcome.ms). */
  private readonly busy = new Map<InputFile, number>();
  private readonly outcomes: ImageOutcome[] = [];
  private finished = 0;
  private readonly http: Http;
  private readonly options: SegmentOptions;
  private readonly display: Display;

  constructor(http: Http, options: SegmentOptions, display: Display) {
    this.http = http;
    this.options = options;
    this.display = display;
    mkdirSync(options.out, { recursive: true });
    this.interruption = options.interruption ?? new Interruption();
    this.wait = { ...options.wait, checkpoint: () => this.checkpoint(), signal: this.interruption.signal };
    this.state = new ResumeState(options.out, http.api);
    this.request = JSON.stringify({ model_id: options.modelId, params: options.params });
    this.choice = { columns: options.columns ?? [], cellObjects: options.cellObjects };
  }

  async run(): Promise<ImageOutcome[]> {
    const { options, display } = this;
    display.count(0, options.inputs.length);
    // Uploads: one after another, each starting when the one before has finished, however far ahead
    // of the predictions that runs.
    let previousUpload: Promise<unknown> = Promise.resolve();
    const prepared = options.inputs.map((input) => {
      const settled = this.state.get(input.path);
      const done =
        settled && settled.size === input.size && settled.mtime_ms === input.mtimeMs && settled.request === this.request && this.exportsDone(settled);
      if (done) return Promise.resolve<Prepared | "done">("done");
      const upload = previousUpload.then(() => this.timed(input, () => this.prepare(input)));
      previousUpload = upload;
      return upload;
    });
    const downloads: Promise<void>[] = [];
    for (const [index, input] of options.inputs.entries()) {
      const next = await prepared[index]!;
      if (next === "done") downloads.push(this.alreadyDone(input));
      else if ("interrupted" in next) this.conclude(input, { ok: false, alreadyDone: false, interrupted: true, cellCount: null, error: "interrupted" }, false);
      else if ("failed" in next) this.conclude(input, { ok: false, alreadyDone: false, interrupted: false, cellCount: null, error: next.failed }, false);
      else {
        const progress = await this.predictOrConclude(input, next.progress);
        if (progress) downloads.push(this.saveAll(input, progress));
      }
    }
    await Promise.all(downloads);
    // In the order given, whatever order they finished in.
    return options.inputs.map((input) => this.outcomes.find((o) => o.input === input)!);
  }

  private checkpoint(): void {
    this.interruption.checkpoint();
  }

  /** Adds the time `step` takes to the image's own time. */
  private async timed<T>(input: InputFile, step: () => Promise<T>): Promise<T> {
    const start = Date.now();
    try {
      return await step();
    } finally {
      this.busy.set(input, (this.busy.get(input) ?? 0) + Date.now() - start);
    }
  }

  private record(input: InputFile, patch: Partial<ImageProgress>): ImageProgress {
    return this.state.update(input.path, patch);
  }

  private saved(progress: ImageProgress, format: ExportFormat): boolean {
    return progress.exports?.[format] === exportMark(format, this.choice);
  }

  private exportsDone(progress: ImageProgress): boolean {
    return this.options.formats.every(
      (f) => this.saved(progress, f) && existsSync(join(this.options.out, progress.folder, exportFile(f, progress.cell_count ?? 0))),
    );
  }

  /** This run's starting point for one image: what the state says, less what no longer holds. */
  private async startingPoint(input: InputFile): Promise<ImageProgress> {
    const { http, request } = this;
    const previous = this.state.get(input.path);
    const sameFile = previous && previous.size === input.size && previous.mtime_ms === input.mtimeMs;
    let progress: ImageProgress = sameFile ? previous : { size: input.size, mtime_ms: input.mtimeMs, folder: previous?.folder ?? input.folder };
    if (progress.request !== request)
      progress = { ...progress, request, prediction_id: undefined, segmentation_id: undefined, cell_count: undefined, blocks: undefined, exports: {} };
    if (progress.segmentation_id && !this.exportsDone(progress) && !(await exists(http, `/segmentation/${progress.segmentation_id}`))) {
      progress = { ...progress, prediction_id: undefined, segmentation_id: undefined, blocks: undefined, exports: {} };
    }
    if (progress.prediction_id && !progress.segmentation_id) {
      const prediction = await http.json<PredictionRecord>("GET", `/predict/${progress.prediction_id}`).catch((e) => (gone(e) ? null : Promise.reject(e)));
      if (!prediction || prediction.status === "FAILED") progress = { ...progress, prediction_id: undefined };
    }
    this.state.set(input.path, progress);
    return progress;
  }

  /** The upload lane's step: the image uploaded, or found already past that. */
  private async prepare(input: InputFile): Promise<Prepared> {
    const { options, display } = this;
    try {
      this.checkpoint();
      const progress = await this.startingPoint(input);
      if (progress.prediction_id || progress.segmentation_id) return { progress };
      const bar = display.bar(`upload ${input.name}`, input.size, "bytes");
      let sent = 0;
      let alreadyUploaded = false;
      try {
        const image = await uploadImage(
          this.http,
          input,
          {
            resumableAbove: options.resumableAbove,
            bodyLimit: options.bodyLimit,
            pollMs: options.wait.pollMs,
            checkpoint: () => this.checkpoint(),
            onBytes: (delta) => bar.update((sent += delta)),
            onPhase: (phase) => bar.update(sent, phase),
            onState: (upload) => this.record(input, upload),
            onAlreadyUploaded: () => (alreadyUploaded = true),
          },
          progress,
        );
        const how = alreadyUploaded ? "already uploaded (same SHA-256), not sent again: image" : "uploaded as";
        bar.finish(`${input.name}: ${how} ${image.id}, pixel size ${formatPixelSize(image)}`);
        return { progress: this.record(input, { image_id: image.id, parts_done: undefined }) };
      } catch (error) {
        bar.finish(`${input.name}: ${error instanceof InterruptedError ? "upload stopped" : `upload failed: ${message(error)}`}`);
        throw error;
      }
    } catch (error) {
      if (error instanceof InterruptedError) return { interrupted: true };
      return { failed: `upload: ${message(error)}` };
    }
  }

  /** The model an image's prediction asks for: the one given, or (auto) the one recommended for its modality, recorded once. */
  private async modelFor(input: InputFile, progress: ImageProgress): Promise<{ modelId: string; progress: ImageProgress }> {
    if (this.options.modelId !== AUTO_MODEL) return { modelId: this.options.modelId, progress };
    if (!progress.model_id) {
      const choice = await chooseModelForFile(input.path, this.options.models ?? []);
      progress = this.record(input, { model_id: choice.modelId, model_reason: choice.reason });
    }
    this.display.log(`${input.name}: model ${progress.model_id}, recommended for ${progress.model_reason}`);
    return { modelId: progress.model_id!, progress };
  }

  /** The prediction lane's step: submitted when the organization's slot is free, followed to its segmentation. */
  private async predict(input: InputFile, progress: ImageProgress): Promise<ImageProgress> {
    if (progress.segmentation_id) return progress;
    const { http, options, display, wait } = this;
    const bar = display.bar(`predict ${input.name}`, 1, "fraction");
    try {
      let predictionId = progress.prediction_id;
      if (!predictionId) {
        this.checkpoint();
        const params = Object.keys(options.params).length ? options.params : undefined;
        const chosen = await this.modelFor(input, progress);
        progress = chosen.progress;
        predictionId = await submitWhenFree(
          http,
          { image_id: progress.image_id!, model_id: chosen.modelId, params },
          { ...wait, onWaiting: (why) => bar.update(0, `waiting: ${why}`) },
        );
        progress = this.record(input, { prediction_id: predictionId });
      }
      const done = await this.timed(input, () =>
        pollPrediction(http, predictionId, {
          ...wait,
          onUpdate: (p) => {
            const { note, detail } = predictionNote(p);
            bar.update(p.progress, note, detail);
          },
        }),
      );
      if (done.status === "FAILED") throw new Error(done.reason ?? "the prediction failed");
      const blocks = done.blocks ? { total: done.blocks.total, glass: done.blocks.glass } : undefined;
      bar.finish(`${input.name}: ${done.cell_count} cells (prediction ${predictionId}${blocks ? `; ${blocksSummary(blocks)}` : ""})`);
      return this.record(input, { segmentation_id: done.segmentation_id!, cell_count: done.cell_count!, blocks });
    } catch (error) {
      if (error instanceof InterruptedError) {
        bar.finish(`${input.name}: stopped${progress.prediction_id ? ` (prediction ${progress.prediction_id} goes on in the service)` : ""}`);
        throw error;
      }
      bar.finish(`${input.name}: prediction failed: ${message(error)}`);
      throw new Error(`predict: ${message(error)}`);
    }
  }

  /** predict, or the image concluded as failed or interrupted (null). */
  private async predictOrConclude(input: InputFile, progress: ImageProgress): Promise<ImageProgress | null> {
    try {
      return await this.predict(input, progress);
    } catch (error) {
      const interrupted = error instanceof InterruptedError;
      this.conclude(input, { ok: false, alreadyDone: false, interrupted, cellCount: null, error: interrupted ? "interrupted" : (error as Error).message });
      return null;
    }
  }

  /** The export lane's step: every export not yet saved, then the overlay; the image concluded. */
  private saveAll(input: InputFile, progress: ImageProgress): Promise<void> {
    const cellCount = progress.cell_count ?? null;
    return this.timed(input, async () => {
      await this.download(input, progress);
      return this.overlay(input, progress, true);
    }).then(
      (note) => this.conclude(input, { ok: true, alreadyDone: false, interrupted: false, cellCount, error: null, note }),
      (error) => this.concludeFailed(input, error, false, cellCount),
    );
  }

  /** An image a previous run finished: only the overlay may be left (an earlier run without --overlay, or stopped before it). */
  private alreadyDone(input: InputFile): Promise<void> {
    const progress = this.state.get(input.path)!;
    this.display.log(`${input.name}: already done (${progress.cell_count} cells in ${join(this.options.out, progress.folder)})`);
    const cellCount = progress.cell_count ?? null;
    return this.overlay(input, progress, false).then(
      (note) => this.conclude(input, { ok: true, alreadyDone: true, interrupted: false, cellCount, error: null, note }),
      (error) => this.concludeFailed(input, error, true, cellCount),
    );
  }

  private async download(input: InputFile, progress: ImageProgress): Promise<void> {
    const { options } = this;
    const dir = join(options.out, progress.folder);
    mkdirSync(dir, { recursive: true });
    const file = (format: ExportFormat) => exportFile(format, progress.cell_count ?? 0);
    for (const format of options.formats) {
      if (this.saved(progress, format) && existsSync(join(dir, file(format)))) continue;
      this.checkpoint();
      try {
        await downloadExport(this.http, progress.segmentation_id!, file(format), dir, this.choice, format);
      } catch (error) {
        throw new Error(`export ${file(format)}: ${message(error)}`);
      }
      progress = this.record(input, { exports: { ...progress.exports, [format]: exportMark(format, this.choice) } });
    }
    this.display.log(`${input.name}: saved ${options.formats.map(file).join(", ")} in ${dir}`);
  }

  /**
   * The overlay (`redraw`: over any earlier one, after new exports; otherwise only if missing);
   * a note if the image is too large for one.
   */
  private async overlay(input: InputFile, progress: ImageProgress, redraw: boolean): Promise<string | undefined> {
    const dir = join(this.options.out, progress.folder);
    if (!this.options.overlay || (!redraw && existsSync(join(dir, overlayFile(input.name))))) return undefined;
    this.checkpoint();
    try {
      this.display.log(`${input.name}: drew ${await writeOverlay(input.path, dir)}`);
      return undefined;
    } catch (error) {
      if (!(error instanceof OverlaySkipped)) throw new Error(`overlay: ${(error as Error).message}`);
      this.display.log(`${input.name}: no overlay: ${error.message}`);
      return `no overlay: ${error.message}`;
    }
  }

  /** The image id is the one recorded, unless `uploaded` is false: an unfinished or refused upload's id names no usable image. */
  private conclude(input: InputFile, outcome: Omit<ImageOutcome, "input" | "ms" | "imageId" | "blocks">, uploaded = true): void {
    const recorded = uploaded ? this.state.get(input.path) : undefined;
    const blocks = outcome.cellCount !== null && recorded?.segmentation_id ? (recorded.blocks ?? null) : null;
    this.outcomes.push({ input, ...outcome, imageId: recorded?.image_id ?? null, blocks, ms: this.busy.get(input) ?? 0 });
    this.display.count(++this.finished, this.options.inputs.length);
  }

  private concludeFailed(input: InputFile, error: unknown, alreadyDone: boolean, cellCount: number | null): void {
    const interrupted = error instanceof InterruptedError;
    this.conclude(input, { ok: false, alreadyDone, interrupted, cellCount, error: interrupted ? "interrupted" : (error as Error).message });
  }
}
