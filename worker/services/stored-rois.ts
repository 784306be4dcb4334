// A segmentation's stored ROIs (its ROI artifact in R2), opened for reading from the start, and
// the one answer to an artifact that does not read.
import { readRoiArtifact } from "../../common/roi-artifact/reader.ts";
import { type RoiArtifactContents, RoiArtifactError } from "../../schema/roi-artifact.ts";
import type { Bindings } from "../env.ts";
import { HttpError } from "../errors.ts";
import type { Segmentation } from "./segmentations.ts";

/** A stored artifact that does not read: logged, and answered 500 without its details. */
export function damagedArtifact(segmentation: Segmentation, error: unknown): never {
  console.error(`ROI artifact of segmentation ${segmentation.id} is unreadable`, error);
  throw new HttpError(500, `The stored ROIs of segmentation ${segmentation.id} are damaged; run the prediction again`);
}

/** The artifact's header and its ROIs, streamed; the caller cancels what it does not read. */
export async function openRoiArtifact(env: Bindings, segmentation: Segmentation): Promise<RoiArtifactContents> {
  const artifact = await env.BUCKET.get(segmentation.artifactKey);
  if (!artifact) throw new HttpError(404, `Segmentation ${segmentation.id} has no stored ROIs`);
  try {
    return await readRoiArtifact(artifact.body);
  } catch (error) {
    if (error instanceof RoiArtifactError) damagedArtifact(segmentation, error);
    throw error;
  }
}
