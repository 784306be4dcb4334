// What an uploaded ZIP holds, through header-parse.ts requests: an OME-Zarr store
// (zarr-structure.ts), else a DICOM whole-slide series (dicom-series.ts). The upload probe runs
// this in the worker; no pixel is read and no codec loaded here.
import { readDicomSeries, type SeriesLevel } from "./dicom-series.ts";
import type { Parse } from "./header-parse.ts";
import { readZarrStructure, type ZarrStructure } from "./zarr-structure.ts";
import { readZipDirectory } from "./zip-directory.ts";

type ZipImage = { kind: "zarr"; zarr: ZarrStructure } | { kind: "dicom-series"; levels: SeriesLevel[] };

/** The image a ZIP of `size` bytes holds, or null when it holds none the readers read. */
export function* readZipImage(size: number): Parse<ZipImage | null> {
  const entries = yield* readZipDirectory(size);
  const zarr = yield* readZarrStructure(entries);
  if (zarr) return { kind: "zarr", zarr };
  const levels = yield* readDicomSeries(entries);
  return levels ? { kind: "dicom-series", levels } : null;
}
