// A DICOM whole-slide series uploaded as one ZIP of its files (one per level, with the label and
// overview images beside them, as a PACS export or the NCI Imaging Data Commons hands them out):
// each stored file's header is read where it lies in the archive (dicom-structure.ts, offset to
// the entry), the label, overview and thumbnail files are set aside, and the levels are ordered
// largest first, the full resolution the image. A level is then read as a file of its own
// (byte-source.ts subSource), so a deflated entry, which cannot be read by parts, is refused.
import { ImageDecodeError } from "../../schema/image-formats/index.ts";
import { type DicomStructure, readDicomStructure } from "./dicom-structure.ts";
import { type Parse, within } from "./header-parse.ts";
import { type ZipEntry, zipDataStart } from "./zip-directory.ts";

/** Files of a series looked at: a slide's levels, label and overview are a handful. */
const MAX_SERIES_FILES = 64;

export interface SeriesLevel {
  name: string;
  /** Where the level's file starts in the archive, and its size. */
  start: number;
  size: number;
  structure: DicomStructure;
}

/** The series' levels, largest first; null when the archive holds no DICOM file. */
export function* readDicomSeries(entries: Map<string, ZipEntry>): Parse<SeriesLevel[] | null> {
  const files = [...entries].filter(([name, entry]) => !name.endsWith("/") && entry.size >= 132).sort(([, a], [, b]) => b.size - a.size);
  const levels: SeriesLevel[] = [];
  let dicomFiles = 0;
  let deflated: string | undefined;
  for (const [name, entry] of files.slice(0, MAX_SERIES_FILES)) {
    const start = zipDataStart(entry, yield { offset: entry.localHeader, length: 30, what: `the ZIP entry ${name}` });
    if (entry.method !== 0) {
      // DICOM files are named .dcm, or have no extension at all (a PACS export's).
      if (/(\.dcm|\/[^./]+)$/i.test(name) || !name.includes(".")) deflated ??= name;
      continue;
    }
    const head = yield { offset: start, length: 132, what: `the ZIP entry ${name}` };
    if (String.fromCharCode(...head.subarray(128, 132)) !== "DICM") continue;
    dicomFiles++;
    try {
      levels.push({ name, start, size: entry.size, structure: yield* within(readDicomStructure(entry.size), start) });
    } catch (error) {
      // The label, overview and thumbnail files are refused as images; beside a pyramid they are simply not read.
      if (!(error instanceof ImageDecodeError) || error.kind !== "unsupported" || !/label|overview|thumbnail/.test(error.message)) throw error;
    }
  }
  if (levels.length === 0) {
    if (deflated && dicomFiles === 0) {
      throw new ImageDecodeError(
        `the ZIP archive's entries are deflated (${deflated}): a DICOM series is read by parts, so store it (zip -r -0 series.zip series/)`,
        "unsupported",
      );
    }
    if (dicomFiles > 0)
      throw new ImageDecodeError("the ZIP archive's DICOM files hold no whole-slide level (only its label, overview or thumbnail)", "unsupported");
    return null;
  }
  return levels.sort((a, b) => b.structure.level.width * b.structure.level.height - a.structure.level.width * a.structure.level.height);
}
