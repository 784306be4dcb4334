// A measurement job: an imported segmentation (outlines from Fiji, QuPath or the viewer's
// corrections) gets the intensities a model's segmentation has, per ROI and channel from the
// image's original pixels, measured here where the pixels are. The ROIs are written back unchanged
// and in the same order, now with their intensities, as a new artifact.
// Imports are bounded by the worker (MAX_IMPORT_PIXELS, MAX_IMPORT_OBJECTS), so the image is
// decoded whole and the ROIs held in memory.
import type { LeasedMeasurement, MeasurementResult } from "../../schema/internal-api.ts";
import { readRoiArtifact } from "../../common/roi-artifact/reader.ts";
import { encodeRoiArtifact } from "../../common/roi-artifact/writer.ts";
import type { Roi } from "../../schema/roi.ts";
import { InputError } from "../engine/faults.ts";
import { distinctChannels, measureOutlineIntensity } from "../engine/intensity.ts";
import { fetchImage } from "./fetch-image.ts";
import { decodeInThread } from "./input-thread/input-thread.ts";
import type { JobContext } from "./job-context.ts";
import { channelNames, concatChunks } from "./predict-job.ts";

export async function runMeasurement(job: LeasedMeasurement, ctx: JobContext): Promise<MeasurementResult> {
  const { width, height } = job.image;
  if (width !== null && height !== null && width * height > ctx.singlePassPixels) {
    throw new InputError(
      `the image has ${((width * height) / 1e6).toFixed(1)} megapixels; imported segmentations are measured up to ${(ctx.singlePassPixels / 1e6).toFixed(1)}`,
    );
  }
  ctx.progress(0, "fetching");
  const [bytes, artifact] = await Promise.all([fetchImage(ctx, job.image), ctx.api.download(job.rois.artifact_url)]);
  ctx.checkpoint();
  ctx.progress(0.3, "decoding");
  const image = await decodeInThread(bytes, ctx.inputBudget);
  ctx.checkpoint();
  const { header, rois: stored } = await readRoiArtifact(ReadableStream.from([artifact]));
  if (header.imageWidth !== image.width || header.imageHeight !== image.height) {
    throw new InputError(`segmentation ${job.rois.segmentation_id} is ${header.imageWidth}x${header.imageHeight}, the image ${image.width}x${image.height}`);
  }
  const rois: Roi[] = [];
  for await (const roi of stored) rois.push(roi);
  ctx.progress(0.5, "measuring");
  // A channel that repeats an earlier one (a gray image stored as RGB) is measured once, as a prediction measures it.
  const distinct = distinctChannels(image);
  const measured = measureOutlineIntensity(distinct.image, rois);
  for (const [i, roi] of rois.entries()) roi.intensity = measured[i];
  ctx.checkpoint();
  ctx.progress(0.9, "uploading");
  const { vertexCount: _vertices, roiCount: _count, ...description } = header;
  const names = channelNames(job.image, image.channels).filter((_, c) => distinct.kept.includes(c));
  const written = await concatChunks(encodeRoiArtifact({ ...description, channelNames: names }, rois));
  // URLs signed at lease time may have expired meanwhile: ask for fresh ones.
  const { output } = (await ctx.api.urls(job)) as LeasedMeasurement;
  await ctx.api.upload(output.artifact_url, written);
  return { measured_rois: rois.length, channels: distinct.image.channels };
}
