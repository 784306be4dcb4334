// A preview job: decode the image and store its preview tile archive for the dashboard's viewer.
// An image above the single-pass size is read by range requests a part at a time and its preview
// summed from the parts (preview-reduction.ts), so no image is held whole, and stretched as its
// sample windows show it, as a block-wise prediction's survey finds it. Where the file has its own
// pyramid (a slide, an OME-Zarr), the parts come from the smallest level that fills the preview.
import type { LeasedPreview, PreviewResult } from "../../schema/internal-api.ts";
import { readPreviewHeader } from "../../schema/preview-tiles.ts";
import { blockGrid } from "../engine/blocks/block-grid.ts";
import { countedSource, openImageRegions } from "../../common/decode/region-reader.ts";
import { readCapBytes } from "../../schema/work-limits.ts";
import { displayRanges, previewFactors, previewTiles } from "../engine/preview.ts";
import { type ModalityReading, readModality, readSample } from "../../common/modality.ts";
import { PreviewReduction } from "../engine/preview-reduction.ts";
import { fetchImage } from "./fetch-image.ts";
import { decodeInThread } from "./input-thread/input-thread.ts";
import { type JobContext, renewedImageUrl } from "./job-context.ts";

/** Side of the parts a large image's preview is read in (4096²: 64 MB a channel). */
const PREVIEW_PART_SIDE = 4096;

export async function runPreview(job: LeasedPreview, ctx: JobContext): Promise<PreviewResult> {
  const { width, height } = job.image;
  const large = width !== null && height !== null && width * height > ctx.singlePassPixels;
  const { archive, modality } = large ? await previewInParts(job, ctx) : await previewWhole(job, ctx);
  ctx.checkpoint();
  ctx.progress(0.9, "uploading");
  const { output } = (await ctx.api.urls(job)) as LeasedPreview;
  await ctx.api.upload(output.preview_url, archive);
  return {
    preview_bytes: archive.length,
    levels: readPreviewHeader(archive).index.levels.length,
    modality: { modality: modality.modality, source: "detected", reason: modality.reason },
  };
}

interface PreviewMade {
  archive: Uint8Array;
  /** What the pixels show, for the model the dashboard offers first (common/modality.ts). */
  modality: ModalityReading;
}

async function previewWhole(job: LeasedPreview, ctx: JobContext): Promise<PreviewMade> {
  ctx.progress(0, "fetching");
  const bytes = await fetchImage(ctx, job.image);
  ctx.checkpoint();
  ctx.progress(0.3, "decoding");
  const image = await decodeInThread(bytes, ctx.inputBudget);
  ctx.checkpoint();
  ctx.progress(0.5, "tiling");
  return { archive: previewTiles(image), modality: readModality(image) };
}

async function previewInParts(job: LeasedPreview, ctx: JobContext): Promise<PreviewMade> {
  ctx.progress(0, "opening");
  // Read at most k x the file through the worker, as a prediction (work-limits.ts).
  const source = await ctx.api.rangeSource(job.image.url, renewedImageUrl(job, ctx));
  const regions = await openImageRegions(countedSource(source, readCapBytes(source.size)));
  // Decided on the sample windows a block-wise prediction's survey reads, before the parts; so is the
  // stretch, which a fanned-out prediction's full-resolution tiles then share (image-survey.ts display).
  const sample = await readSample(regions);
  const display = displayRanges(sample);
  const modality = readModality(sample);
  // The file's own smallest level that still fills the preview's finest level, where it has one:
  // a slide's pyramid then costs a fraction of a full-resolution pass.
  const factor = previewFactors(regions.width, regions.height)[0]!;
  const [across, down] = [Math.ceil(regions.width / factor), Math.ceil(regions.height / factor)];
  const levelIndex = regions.readLevel ? regions.levels.findLastIndex((l) => l.width >= across && l.height >= down) : -1;
  const read = levelIndex >= 0 ? await regions.readLevel!(levelIndex) : regions;
  const reduction = new PreviewReduction(regions.width, regions.height, regions.channels, read);
  const { blocks } = blockGrid(read.width, read.height, PREVIEW_PART_SIDE, 0);
  const shown = Array.from({ length: Math.min(3, regions.channels) }, (_, c) => c);
  for (const [i, { core }] of blocks.entries()) {
    const part = await read.readRegion(core.x, core.y, core.width, core.height, { channels: shown });
    reduction.add(part, { x: core.x, y: core.y, from: { x: 0, y: 0, width: core.width, height: core.height } });
    ctx.checkpoint();
    ctx.progress((0.8 * (i + 1)) / blocks.length, "reading");
  }
  return { archive: reduction.tiles(display), modality };
}
