// The committed base model into R2, where the database's `cpsam` row points (its r2_prefix, set by
// the migrations: a new cpsam release is a new version and prefix, so runners' caches, keyed by
// model id and version, never serve the old weights under the new name).
import { existsSync } from "node:fs";
import { d1, r2Put, type Target } from "./wrangler.ts";
import { MODEL_FILES } from "../schema/storage-keys.ts";

/** The committed base model; CELLSEG_BASE_MODEL_DIR points `npm start` at another one. */
export const BASE_MODEL_DIR = process.env.CELLSEG_BASE_MODEL_DIR ?? "gpu-runner/models/cpsam";

/** Puts `<dir>/cpsam.onnx` + `cpsam.json` under the `cpsam` row's prefix; false when there is no model file. */
export function uploadBaseModel(target: Target, dir = BASE_MODEL_DIR): boolean {
  if (!existsSync(`${dir}/cpsam.onnx`)) return false;
  const rows = d1(target, "SELECT r2_prefix FROM models WHERE id = 'cpsam'") as { r2_prefix: string }[];
  if (rows.length !== 1) throw new Error("the database has no cpsam model row: apply the migrations first");
  const prefix = rows[0]!.r2_prefix;
  r2Put(target, prefix + MODEL_FILES.onnx, `${dir}/cpsam.onnx`);
  r2Put(target, prefix + MODEL_FILES.manifest, `${dir}/cpsam.json`);
  return true;
}
