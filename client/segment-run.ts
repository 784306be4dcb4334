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
  mkdirSync(options.out, { recursive: true });
  const interruption = options.interruption ?? new Interruption();
  const checkpoint = () => interruption.checkpoint();
  const wait = { ...options.wait, checkpoint, signal: interruption.signal };
  const state = new ResumeState(options.out, http.api);
  const request = JSON.stringify({ model_id: options.modelId, params: options.params });
  const busy = new Map<InputFile, number>();
  /** Adds the time `step` takes to the image's own time. */
  async function timed<T>(input: InputFile, step: () => Promise<T>): Promise<T> {
    const start = Date.now();
    try {
      return await step();
    } finally {
      busy.set(input, (busy.get(input) ?? 0) + Date.now() - start);
    }
  }
  let finished = 0;
  display.count(0, options.inputs.length);

  const record = (input: InputFile, patch: Partial<ImageProgress>) => state.update(input.path, patch);
  const choice: ExportChoice = { columns: options.columns ?? [], cellObjects: options.cellObjects };
  const saved = (progress: ImageProgress, format: ExportFormat) => progress.exports?.[format] === exportMark(format, choice);
  const exportsDone = (_input: InputFile, progress: ImageProgress) =>
    options.formats.every((f) => saved(progress, f) && existsSync(join(options.out, progress.folder, exportFile(f, progress.cell_count ?? 0))));

  /** This run's starting point for one image: what the state says, less what no longer holds. */
  async function startingPoint(input: InputFile): Promise<ImageProgress> {
    const previous = state.get(input.path);
    const sameFile = previous && previous.size === input.size && previous.mtime_ms === input.mtimeMs;
    let progress: ImageProgress = sameFile ? previous : { size: input.size, mtime_ms: input.mtimeMs, folder: previous?.folder ?? input.folder };
    if (progress.request !== request)
      progress = { ...progress, request, prediction_id: undefined, segmentation_id: undefined, cell_count: undefined, blocks: undefined, exports: {} };
    if (progress.segmentation_id && !exportsDone(input, progress) && !(await exists(http, `/segmentation/${progress.segmentation_id}`))) {
      progress = { ...progress, prediction_id: undefined, segmentation_id: undefined, blocks: undefined, exports: {} };
    }
    if (progress.prediction_id && !progress.segmentation_id) {
      const prediction = await http.json<PredictionRecord>("GET", `/predict/${progress.prediction_id}`).catch((e) => (gone(e) ? null : Promise.reject(e)));
      if (!prediction || prediction.status === "FAILED") progress = { ...progress, prediction_id: undefined };
    }
    state.set(input.path, progress);
    return progress;
  }

  async function prepare(input: InputFile): Promise<Prepared> {
    try {
      checkpoint();
      const progress = await startingPoint(input);
      if (progress.prediction_id || progress.segmentation_id) return { progress };
      const bar = display.bar(`upload ${input.name}`, input.size, "bytes");
      let sent = 0;
      let alreadyUploaded = false;
      try {
        const image = await uploadImage(
          http,
          input,
          {
            resumableAbove: options.resumableAbove,
            bodyLimit: options.bodyLimit,
            pollMs: options.wait.pollMs,
            checkpoint,
            onBytes: (delta) => bar.update((sent += delta)),
            onPhase: (phase) => bar.update(sent, phase),
            onState: (upload) => record(input, upload),
            onAlreadyUploaded: () => (alreadyUploaded = true),
          },
          progress,
        );
        const how = alreadyUploaded ? "already uploaded (same SHA-256), not sent again: image" : "uploaded as";
        bar.finish(`${input.name}: ${how} ${image.id}, pixel size ${formatPixelSize(image)}`);
        return { progress: record(input, { image_id: image.id, parts_done: undefined }) };
      } catch (error) {
        bar.finish(`${input.name}: ${error instanceof InterruptedError ? "upload stopped" : `upload failed: ${message(error)}`}`);
        throw error;
      }
    } catch (error) {
      if (error instanceof InterruptedError) return { interrupted: true };
      return { failed: `upload: ${message(error)}` };
    }
  }

  async function predict(input: InputFile, progress: ImageProgress): Promise<ImageProgress> {
    if (progress.segmentation_id) return progress;
    const bar = display.bar(`predict ${input.name}`, 1, "fraction");
    try {
      let predictionId = progress.prediction_id;
      if (!predictionId) {
        checkpoint();
        const params = Object.keys(options.params).length ? options.params : undefined;
        let modelId = options.modelId;
        if (modelId === AUTO_MODEL) {
          if (!progress.model_id) {
            const choice = await chooseModelForFile(input.path, options.models ?? []);
            progress = record(input, { model_id: choice.modelId, model_reason: choice.reason });
          }
          modelId = progress.model_id!;
          display.log(`${input.name}: model ${modelId}, recommended for ${progress.model_reason}`);
        }
        predictionId = await submitWhenFree(
          http,
          { image_id: progress.image_id!, model_id: modelId, params },
          {
            ...wait,
            onWaiting: (why) => bar.update(0, `waiting: ${why}`),
          },
        );
        progress = record(input, { prediction_id: predictionId });
      }
      const done = await timed(input, () =>
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
      return record(input, { segmentation_id: done.segmentation_id!, cell_count: done.cell_count!, blocks });
    } catch (error) {
      if (error instanceof InterruptedError) {
        bar.finish(`${input.name}: stopped${progress.prediction_id ? ` (prediction ${progress.prediction_id} goes on in the service)` : ""}`);
        throw error;
      }
      bar.finish(`${input.name}: prediction failed: ${message(error)}`);
      throw new Error(`predict: ${message(error)}`);
    }
  }

  async function download(input: InputFile, progress: ImageProgress): Promise<void> {
    const dir = join(options.out, progress.folder);
    mkdirSync(dir, { recursive: true });
    const file = (format: ExportFormat) => exportFile(format, progress.cell_count ?? 0);
    for (const format of options.formats) {
      if (saved(progress, format) && existsSync(join(dir, file(format)))) continue;
      checkpoint();
      try {
        await downloadExport(http, progress.segmentation_id!, file(format), dir, choice, format);
      } catch (error) {
        throw new Error(`export ${file(format)}: ${message(error)}`);
      }
      progress = record(input, { exports: { ...progress.exports, [format]: exportMark(format, choice) } });
    }
    display.log(`${input.name}: saved ${options.formats.map(file).join(", ")} in ${dir}`);
  }

  /**
   * The overlay (`redraw`: over any earlier one, after new exports; otherwise only if missing);
   * a note if the image is too large for one.
   */
  async function overlay(input: InputFile, progress: ImageProgress, redraw: boolean): Promise<string | undefined> {
    const dir = join(options.out, progress.folder);
    if (!options.overlay || (!redraw && existsSync(join(dir, overlayFile(input.name))))) return undefined;
    checkpoint();
    try {
      display.log(`${input.name}: drew ${await writeOverlay(input.path, dir)}`);
      return undefined;
    } catch (error) {
      if (!(error instanceof OverlaySkipped)) throw new Error(`overlay: ${(error as Error).message}`);
      display.log(`${input.name}: no overlay: ${error.message}`);
      return `no overlay: ${error.message}`;
    }
  }

  const outcomes: ImageOutcome[] = [];
  /** The image id is the one recorded, unless `uploaded` is false: an unfinished or refused upload's id names no usable image. */
  const conclude = (input: InputFile, outcome: Omit<ImageOutcome, "input" | "ms" | "imageId" | "blocks">, uploaded = true) => {
    const recorded = uploaded ? state.get(input.path) : undefined;
    const blocks = outcome.cellCount !== null && recorded?.segmentation_id ? (recorded.blocks ?? null) : null;
    outcomes.push({ input, ...outcome, imageId: recorded?.image_id ?? null, blocks, ms: busy.get(input) ?? 0 });
    display.count(++finished, options.inputs.length);
  };

  // Uploads: one after another, each starting when the one before has finished, however far ahead
  // of the predictions that runs.
  let previousUpload: Promise<unknown> = Promise.resolve();
  const prepared = options.inputs.map((input) => {
    const settled = state.get(input.path);
    const done = settled && settled.size === input.size && settled.mtime_ms === input.mtimeMs && settled.request === request && exportsDone(input, settled);
    if (done) return Promise.resolve<Prepared | "done">("done");
    const upload = previousUpload.then(() => timed(input, () => prepare(input)));
    previousUpload = upload;
    return upload;
  });

  const downloads: Promise<void>[] = [];
  for (const [index, input] of options.inputs.entries()) {
    const next = await prepared[index]!;
    if (next === "done") {
      const progress = state.get(input.path)!;
      display.log(`${input.name}: already done (${progress.cell_count} cells in ${join(options.out, progress.folder)})`);
      const cellCount = progress.cell_count ?? null;
      // An earlier run without --overlay (or one stopped before it) leaves the overlay to draw.
      downloads.push(
        overlay(input, progress, false).then(
          (note) => conclude(input, { ok: true, alreadyDone: true, interrupted: false, cellCount, error: null, note }),
          (error) => {
            const interrupted = error instanceof InterruptedError;
            conclude(input, { ok: false, alreadyDone: true, interrupted, cellCount, error: interrupted ? "interrupted" : (error as Error).message });
          },
        ),
      );
      continue;
    }
    if ("interrupted" in next) {
      conclude(input, { ok: false, alreadyDone: false, interrupted: true, cellCount: null, error: "interrupted" }, false);
      continue;
    }
    if ("failed" in next) {
      conclude(input, { ok: false, alreadyDone: false, interrupted: false, cellCount: null, error: next.failed }, false);
      continue;
    }
    let progress: ImageProgress;
    try {
      progress = await predict(input, next.progress);
    } catch (error) {
      const interrupted = error instanceof InterruptedError;
      conclude(input, { ok: false, alreadyDone: false, interrupted, cellCount: null, error: interrupted ? "interrupted" : (error as Error).message });
      continue;
    }
    downloads.push(
      timed(input, async () => {
        await download(input, progress);
        return overlay(input, progress, true);
      }).then(
        (note) => conclude(input, { ok: true, alreadyDone: false, interrupted: false, cellCount: progress.cell_count ?? null, error: null, note }),
        (error) => {
          const interrupted = error instanceof InterruptedError;
          conclude(input, {
            ok: false,
            alreadyDone: false,
            interrupted,
            cellCount: progress.cell_count ?? null,
            error: interrupted ? "interrupted" : (error as Error).message,
          });
        },
      ),
    );
  }
  await Promise.all(downloads);
  // In the order given, whatever order they finished in.
  return options.inputs.map((input) => outcomes.find((o) => o.input === input)!);
}
