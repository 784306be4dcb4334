// ImageJ ROIs as Fiji saves them: a single .roi, or the ROI Manager's .zip of .roi entries (in
// the Manager's order, which is the drawing order: a later ROI wins shared pixels).

import { decodeImageJRoi } from "./imagej-roi-decoder.ts";
import { AnnotationImportError } from "./errors.ts";
import { MAX_ARCHIVE_ENTRIES, MAX_ARCHIVE_INFLATED_BYTES, MAX_ROI_FILE_BYTES } from "./limits.ts";
import type { OutlineCollector } from "./outlines.ts";
import { entryData, zipEntries } from "./zip-entries.ts";

export function collectImageJRoi(bytes: Uint8Array, collector: OutlineCollector): void {
  collector.add({ rings: [decodeImageJRoi(bytes).polygon], where: "the ROI" });
}

export function collectImageJRoiArchive(bytes: Uint8Array, collector: OutlineCollector): void {
  let inflated = 0;
  for (const entry of zipEntries(bytes, MAX_ARCHIVE_ENTRIES)) {
    const base = entry.name.slice(entry.name.lastIndexOf("/") + 1);
    // Folders, and the "._name" resource forks macOS adds to archives it makes, hold no ROI.
    if (base === "" || base.startsWith("._")) continue;
    if (!base.toLowerCase().endsWith(".roi")) {
      throw new AnnotationImportError("invalid_content", `the archive holds ${entry.name}, which is not a .roi; an ROI archive holds only ImageJ .roi files`);
    }
    const data = entryData(bytes, entry, Math.min(MAX_ROI_FILE_BYTES, MAX_ARCHIVE_INFLATED_BYTES - inflated));
    inflated += data.length;
    const where = `entry ${entry.name}`;
    collector.add({ rings: [decodeImageJRoi(data, where).polygon], where });
  }
}
