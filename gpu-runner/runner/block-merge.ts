// The last attempt of a block-wise prediction: every block task is done, and their parts become
// the prediction's outputs. Each block's cells are read in grid order into the same merge the
// in-process loop uses (segment-blocks.ts BlockMerge), so the artifact is the one a single runner
// would have written: the same cells, in the same raster order, numbered alike. The preview's
// finest level is the sum of the blocks' shares, stretched by the plan's display; when every block
// wrote its core's full-resolution tile pack, a manifest naming them makes them the image's
// full-resolution level. Only cells are held, encoded, never pixels.
import type { LeasedPrediction } from "../../schema/internal-api.ts";
import { type FullResolutionManifest, PREVIEW_TILE_SIDE } from "../../schema/preview-tiles.ts";
import { readRoiArtifact } from "../../common/roi-artifact/reader.ts";
import { RoiArtifactAccumulator } from "../../common/roi-artifact/writer.ts";
import { blockGrid } from "../engine/blocks/block-grid.ts";
import { BlockMerge, confluencyOf } from "../engine/blocks/segment-blocks.ts";
import { PreviewReduction } from "../engine/preview-reduction.ts";
import type { JobContext } from "./job-context.ts";
import { predictionResult, uploadSummedPreview } from "./predict-job.ts";

/**
 * Parts downloaded ahead of the one being merged: the round trips overlap the merging, and a part
 * (a block's cells and preview share) is a few MB at most.
 */
const PARTS_AHEAD = 4;
/** A merged part's place in the download list, so that its bytes can be collected. */
const DONE = Promise.resolve([new Uint8Array(0), null] as [Uint8Array, null]);

export async function runMerge(job: LeasedPrediction, ctx: JobContext) {
  const started = performance.now();
  const merge = job.merge!;
  const { plan, parts } = merge;
  const grid = blockGrid(plan.width, plan.height, plan.core_side, plan.margin);
  if (grid.blocks.length !== parts.length) throw new Error(`the plan has ${grid.blocks.length} blocks, the merge ${parts.length} parts`);
  const cells = new BlockMerge(grid);
  let artifact: RoiArtifactAccumulator | undefined;
  let preview: PreviewReduction | undefined;
  ctx.progress(0.95, "merging");
  const withPreview = Boolean(job.output.preview_url);
  const download = (part: (typeof parts)[number]) => {
    const both = Promise.all([ctx.api.download(part.cells_url), part.preview_url && withPreview ? ctx.api.download(part.preview_url) : null]);
    both.catch(() => undefined); // awaited in its turn; a part that fails while another is awaited must not go unhandled
    return both;
  };
  const downloads = parts.slice(0, PARTS_AHEAD).map(download);
  for (let index = 0; index < parts.length; index++) {
    const [cellBytes, share] = await downloads[index]!;
    if (index + PARTS_AHEAD < parts.length) downloads.push(download(parts[index + PARTS_AHEAD]!));
    downloads[index] = DONE;
    const { header, rois } = await readRoiArtifact(new Blob([cellBytes as Uint8Array<ArrayBuffer>]).stream());
    artifact ??= new RoiArtifactAccumulator({
      imageWidth: header.imageWidth,
      imageHeight: header.imageHeight,
      modelName: job.model.name,
      modelVersion: job.model.version,
      ...(header.channelNames && { channelNames: header.channelNames }),
      ...(header.cells !== undefined && { cells: header.cells }),
    });
    const kept = [];
    for await (const roi of rois) kept.push(roi);
    for (const roi of cells.add(index, kept)) artifact.add(roi);
    if (share) {
      preview ??= new PreviewReduction(plan.width, plan.height, new Int32Array(share.buffer, share.byteOffset, 5)[4]!);
      preview.addShare(share);
    }
    ctx.checkpoint();
  }
  const confluency = confluencyOf(merge.kept_area, plan.width, plan.height);
  const mergedMs = performance.now() - started;
  ctx.progress(0.98, "uploading");
  const renewed = (await ctx.api.urls(job)) as LeasedPrediction;
  const { output } = renewed;
  await ctx.api.upload(output.artifact_url, new Blob(artifact!.finish(confluency) as Uint8Array<ArrayBuffer>[]));
  const manifestUrl = renewed.merge?.full_manifest_url;
  if (manifestUrl) {
    const manifest: FullResolutionManifest = {
      width: plan.width,
      height: plan.height,
      tile: PREVIEW_TILE_SIDE,
      core_side: plan.core_side,
      blocks: grid.blocks.map(({ core }) => core),
    };
    await ctx.api.upload(manifestUrl, new TextEncoder().encode(JSON.stringify(manifest)));
  }
  if (preview && output.preview_url) await uploadSummedPreview(job, ctx, preview, plan.display, output.preview_url);
  const { read_ms: read = 0, read_bytes: readBytes, ...stages } = merge.timings;
  const blockStages = Object.fromEntries(Object.entries(stages).map(([key, ms]) => [key.replace(/_ms$/, ""), ms]));
  const result = predictionResult(
    {
      confluency,
      width: plan.width,
      height: plan.height,
      diameter: plan.diameter,
      ...(plan.survey.diameter_basis && { diameterBasis: plan.survey.diameter_basis }),
      ...(plan.survey.modality && { modality: plan.survey.modality }),
      timings: { ...blockStages, merge: mergedMs },
    },
    artifact!.roiCount,
    { fetch: 0, decode: read, total: performance.now() - started },
    merge.execution_providers.join(", ") || "none (every block was glass)",
  );
  return {
    ...result,
    timings: { ...result.timings, blocks: parts.length, glass_blocks: merge.glass_blocks, ...(readBytes !== undefined && { read_bytes: readBytes }) },
  };
}
