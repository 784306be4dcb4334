// Runs an export the way the route does: the artifact goes into R2, its body comes back as a
// stream, and the export entry turns it into a file.

import type { Roi } from "../../../../schema/roi.ts";
import type { RoiArtifactDescription } from "../../../../common/roi-artifact/writer.ts";
import type { ExportContext } from "../../../../schema/measurements.ts";
import { EXPORTS } from "../../../../worker/exports/index.ts";
import type { ExportFile, ExportFormatName, ExportOptions } from "../../../../worker/exports/index.ts";
import { artifactBody, encodeToBytes, storeArtifact } from "./artifact-store.ts";
import { smallContext, smallDescription, smallRois } from "./small-segmentation.ts";

let keys = 0;

export async function exportFrom(
  format: ExportFormatName,
  description: RoiArtifactDescription,
  rois: readonly Roi[],
  context: ExportContext,
  options: ExportOptions = {},
): Promise<ExportFile> {
  const key = `orgs/test/segmentations/${context.segmentationId}/rois-${keys++}.artifact`;
  await storeArtifact(key, await encodeToBytes(description, rois));
  return EXPORTS[format](await artifactBody(key), context, options, () => artifactBody(key));
}

export function exportSmall(format: ExportFormatName, options: ExportOptions = {}, context: ExportContext = smallContext): Promise<ExportFile> {
  return exportFrom(format, smallDescription, smallRois, context, options);
}
