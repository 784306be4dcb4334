// The committed public models into R2, where each one's database row points (its r2_prefix, set by
// the migrations: a new release is a new version and prefix, so runners' caches, keyed by model id
// and version, never serve the old weights under the new name).
import { existsSync } from "node:fs";
import { d1, r2Put, type Target } from "./wrangler.ts";
import { MODEL_FILES } from "../schema/storage-keys.ts";

/** The committed base model; CELLSEG_BASE_MODEL_DIR points `npm start` at another one. */
export const BASE_MODEL_DIR = process.env.CELLSEG_BASE_MODEL_DIR ?? "gpu-runner/models/cpsam";

/** Each public model's folder, holding <id>.onnx and <id>.json; cpsam, the default, first. */
export const PUBLIC_MODEL_DIRS: Readonly<Record<string, string>> = {
  cpsam: BASE_MODEL_DIR,
  "cpsam-large": "gpu-runner/models/cpsam-large",
  "cpsam-histology": "gpu-runner/models/cpsam-histology",
};

/** The model's two files, or null when its weights are not committed. */
export function publicModelFiles(id: string, dir = PUBLIC_MODEL_DIRS[id]): { onnx: string; manifest: string } | null {
  if (dir === undefined || !existsSync(`${dir}/${id}.onnx`)) return null;
  return { onnx: `${dir}/${id}.onnx`, manifest: `${dir}/${id}.json` };
}

/** Puts the model's files under its row's prefix; false when its weights are not committed. */
export function uploadPublicModel(target: Target, id: string, dir = PUBLIC_MODEL_DIRS[id]): boolean {
  const files = publicModelFiles(id, dir);
  if (!files) return false;
  const rows = d1(target, `SELECT r2_prefix FROM models WHERE id = '${id.replaceAll("'", "''")}' AND org_id IS NULL`) as { r2_prefix: string }[];
  if (rows.length !== 1) throw new Error(`the database has no ${id} model row: apply the migrations first`);
  const prefix = rows[0]!.r2_prefix;
  r2Put(target, prefix + MODEL_FILES.onnx, files.onnx);
  r2Put(target, prefix + MODEL_FILES.manifest, files.manifest);
  return true;
}

/** Every public model whose weights are committed; returns their ids. */
export function uploadPublicModels(target: Target): string[] {
  return Object.keys(PUBLIC_MODEL_DIRS).filter((id) => uploadPublicModel(target, id));
}
