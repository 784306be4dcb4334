// The files a `segment` run works on: each file named, and the images directly inside each folder
// named (by extension; hidden files and the --out folder left out). Each gets its own output folder
// under --out, named after the file without its extension and made unique if two names collide.
import { readdirSync, statSync } from "node:fs";
import { basename, extname, join, resolve } from "node:path";

/** What the service reads: TIFF (an Aperio .svs, a Hamamatsu .ndpi, a Leica .scn and a Ventana .bif are TIFFs), a DICOM whole-slide level, a zipped OME-Zarr, PNG and JPEG. */
export const IMAGE_EXTENSIONS = new Set([".tif", ".tiff", ".svs", ".ndpi", ".scn", ".bif", ".dcm", ".zip", ".png", ".jpg", ".jpeg"]);

export interface InputFile {
  /** Absolute path. */
  path: string;
  /** The base name, which the service records as the image's name. */
  name: string;
  size: number;
  mtimeMs: number;
  /** Folder under --out for this image's exports. */
  folder: string;
}

/** Names safe as a folder on every file system. */
const safe = (name: string) => name.replace(/[\u0000-\u001f\u007f/\\:*?"<>|]+/g, "_").trim() || "image";

export function collectInputs(paths: string[], outDir: string): InputFile[] {
  const out = resolve(outDir);
  const files: string[] = [];
  for (const path of paths.map((p) => resolve(p))) {
    const stats = statSync(path, { throwIfNoEntry: false });
    if (!stats) throw new Error(`${path} does not exist`);
    if (stats.isDirectory()) {
      const inside = readdirSync(path, { withFileTypes: true })
        .filter((e) => e.isFile() && !e.name.startsWith(".") && IMAGE_EXTENSIONS.has(extname(e.name).toLowerCase()))
        .map((e) => join(path, e.name))
        .filter((file) => !file.startsWith(`${out}/`))
        .sort();
      files.push(...inside);
    } else {
      files.push(path);
    }
  }
  const seen = new Set<string>();
  const taken = new Set<string>();
  const inputs: InputFile[] = [];
  for (const path of files) {
    if (seen.has(path)) continue;
    seen.add(path);
    const name = basename(path);
    let folder = safe(basename(path, extname(path)));
    if (taken.has(folder)) folder = safe(name);
    for (let n = 2; taken.has(folder); n++) folder = `${safe(name)}-${n}`;
    taken.add(folder);
    const stats = statSync(path);
    inputs.push({ path, name, size: stats.size, mtimeMs: Math.round(stats.mtimeMs), folder });
  }
  return inputs;
}
