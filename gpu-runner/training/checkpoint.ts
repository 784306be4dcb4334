// A checkpoint holds everything a run needs to continue exactly where it stopped: the config,
// the step, the random generator's state, the weights and both Adam moments.
// File layout: "CSCK" magic, uint32 header length, JSON header, padding to 4 bytes, then params,
// first moment and second moment as little-endian float32.
import { renameSync, readFileSync, writeFileSync } from "node:fs";
import type { TrainingConfig } from "./training-config.ts";

export interface TrainingState {
  config: TrainingConfig;
  /** Steps completed. */
  step: number;
  randomState: number;
  params: Float32Array;
  firstMoment: Float32Array;
  secondMoment: Float32Array;
  /** Free-form run history (losses, validation scores) carried along for the training record. */
  history: Record<string, unknown>;
}

const MAGIC = 0x4b435343; // "CSCK" read as little-endian uint32

// Exported for its tests only (test/training/average-weights.test.ts, test/training/checkpoint.test.ts).
export function encodeCheckpoint(state: TrainingState): Uint8Array {
  const header = new TextEncoder().encode(
    JSON.stringify({ config: state.config, step: state.step, randomState: state.randomState, history: state.history, count: state.params.length }),
  );
  const headerEnd = 8 + header.length;
  const dataStart = Math.ceil(headerEnd / 4) * 4;
  const count = state.params.length;
  const bytes = new Uint8Array(dataStart + 3 * count * 4);
  const view = new DataView(bytes.buffer);
  view.setUint32(0, MAGIC, true);
  view.setUint32(4, header.length, true);
  bytes.set(header, 8);
  const floats = new Float32Array(bytes.buffer, dataStart, 3 * count);
  floats.set(state.params, 0);
  floats.set(state.firstMoment, count);
  floats.set(state.secondMoment, 2 * count);
  return bytes;
}

export function decodeCheckpoint(bytes: Uint8Array): TrainingState {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.length < 8 || view.getUint32(0, true) !== MAGIC) throw new Error("not a training checkpoint (bad magic)");
  const headerLength = view.getUint32(4, true);
  if (8 + headerLength > bytes.length) throw new Error("truncated training checkpoint header");
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + headerLength)));
  const dataStart = Math.ceil((8 + headerLength) / 4) * 4;
  const count: number = header.count;
  if (dataStart + 12 * count !== bytes.length)
    throw new Error(`truncated training checkpoint: expected ${dataStart + 12 * count} bytes, found ${bytes.length}`);
  // Copied out byte-wise: a Buffer from readFileSync may sit at any offset of a shared pool.
  const floats = new Float32Array(3 * count);
  new Uint8Array(floats.buffer).set(bytes.subarray(dataStart, dataStart + 12 * count));
  return {
    config: header.config,
    step: header.step,
    randomState: header.randomState,
    history: header.history,
    params: floats.slice(0, count),
    firstMoment: floats.slice(count, 2 * count),
    secondMoment: floats.slice(2 * count, 3 * count),
  };
}

/** Writes to a temporary name first so an interruption never leaves a half-written checkpoint. */
export function saveCheckpoint(path: string, state: TrainingState): void {
  writeFileSync(`${path}.partial`, encodeCheckpoint(state));
  renameSync(`${path}.partial`, path);
}

export function loadCheckpoint(path: string): TrainingState {
  return decodeCheckpoint(readFileSync(path));
}
