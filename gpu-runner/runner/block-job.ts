// One block of a block-wise prediction, leased like any job: read the block's rectangle by range
// requests, segment it with the plan's survey (engine/blocks/segment-blocks.ts segmentBlock), and
// write the cells its core keeps, in raster order, as an ROI artifact of their own for the
// prediction's merge (block-merge.ts), with the block's share of the image's preview while it has
// none, and its core at full resolution as a tile pack while the image has no full-resolution level.
import { readCapBytes } from "../../schema/work-limits.ts";
import type { BlockPlan, BlockResult, LeasedBlock } from "../../schema/internal-api.ts";
import type { Roi } from "../../schema/roi.ts";
import { blockGrid } from "../engine/blocks/block-grid.ts";
import type { ImageSurvey } from "../engine/blocks/image-survey.ts";
import { RasterOrderQueue } from "../engine/blocks/raster-order.ts";
import { segmentBlock } from "../engine/blocks/segment-blocks.ts";
import type { DiameterEstimate } from "../engine/segment.ts";
import { previewShare } from "../engine/preview-reduction.ts";
import { fullResolutionTiles } from "../engine/preview.ts";
import { countedSource, openImageRegions } from "../../common/decode/region-reader.ts";
import type { JobContext } from "./job-context.ts";
import { channelNames, concatChunks, segmentParams, withinWorkLimits } from "./predict-job.ts";
import { encodeRoiArtifact } from "../../common/roi-artifact/writer.ts";

/** The survey every block shares, as the plan carries it. */
function surveyOfPlan(plan: BlockPlan): ImageSurvey {
  const { survey } = plan;
  return {
    normalization: survey.normalization,
    diameter: survey.diameter,
    ...(survey.modality && { modality: survey.modality }),
    ...(survey.diameter_estimate && { diameterEstimate: survey.diameter_estimate as unknown as DiameterEstimate }),
    // Older plans carry no basis: their diameter is all that is known of it.
    diameterBasis: survey.diameter_basis ?? { source: survey.diameter === undefined ? "model" : "given", reason: `${plan.diameter} px` },
    sampledPixels: 0,
  };
}

export async function runBlock(job: LeasedBlock, ctx: JobContext): Promise<BlockResult> {
  const expansion = withinWorkLimits(job);
  const { plan } = job;
  const block = blockGrid(plan.width, plan.height, plan.core_side, plan.margin).blocks[job.block.index];
  if (!block) throw new Error(`block ${job.block.index} is outside its plan's ${plan.rows}x${plan.columns} grid`);
  ctx.progress(0, "reading");
  const renew = async () => ((await ctx.api.urls(job)) as LeasedBlock).image.url;
  const [source, model] = await Promise.all([ctx.api.rangeSource(job.image.url, renew), ctx.models.session(ctx.api, job.model)]);
  const counted = countedSource(source, readCapBytes(source.size));
  const regions = await openImageRegions(counted);
  if (regions.width !== plan.width || regions.height !== plan.height) {
    throw new Error(`the image is ${regions.width}x${regions.height}, its plan ${plan.width}x${plan.height}`);
  }
  ctx.checkpoint();
  let preview: Uint8Array | undefined;
  let full: Uint8Array | undefined;
  const kept = await segmentBlock(
    regions,
    block,
    { survey: surveyOfPlan(plan), diameter: plan.diameter },
    model,
    segmentParams(job.params, model.manifest.channels, job.image.pixel_size_um),
    {
      measureIntensity: true,
      cellExpansion: expansion ?? undefined,
      signal: ctx.signal,
      // Made from the pixels as read, before segmenting.
      onRead: (region, { read, core }) => {
        const from = { x: core.x - read.x, y: core.y - read.y, width: core.width, height: core.height };
        if (job.output.preview_url) preview = previewShare(plan.width, plan.height, region, { x: read.x, y: read.y, from });
        // As the preview: tiles that cannot be made cost the viewer its full resolution, never the segmentation.
        try {
          if (job.output.full_url && plan.display) full = fullResolutionTiles(region, from, plan.display);
        } catch (error) {
          ctx.log(`[runner] ${job.job_id}: no full-resolution tiles (${(error as Error).message})`);
        }
      },
    },
  );
  ctx.checkpoint();
  ctx.progress(0.9, "uploading");
  const { output } = (await ctx.api.urls(job)) as LeasedBlock;
  const cells = await concatChunks(
    encodeRoiArtifact(
      {
        imageWidth: plan.width,
        imageHeight: plan.height,
        confluency: 0,
        modelName: job.model.name,
        modelVersion: job.model.version,
        channelNames: channelNames(job.image, regions.channels),
        cells: expansion !== null,
      },
      inRasterOrder(kept.cells, plan.width),
    ),
  );
  await ctx.api.upload(output.cells_url, cells);
  if (preview && output.preview_url) await ctx.api.upload(output.preview_url, preview);
  if (full && output.full_url) await ctx.api.upload(output.full_url, full);
  const timings = Object.fromEntries(Object.entries(kept.timings).map(([stage, ms]) => [`${stage}_ms`, Math.round(ms)]));
  return {
    block_cells: kept.cells.length,
    kept_area: kept.keptArea,
    glass: kept.glass,
    timings: { ...timings, read_bytes: counted.bytesRead },
    ...(!kept.glass && { execution_provider: model.executionProvider }),
  };
}

/** An artifact's ROIs run in raster order, numbered from 0 (the merge numbers them anew). */
function inRasterOrder(cells: Roi[], width: number): Roi[] {
  const queue = new RasterOrderQueue(width);
  for (const cell of cells) queue.add(cell);
  return queue.releaseAll();
}
