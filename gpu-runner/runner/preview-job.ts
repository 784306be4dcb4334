// A preview job: decode the image and store its preview tile archive for the dashboard's viewer.
import type { LeasedPreview, PreviewResult } from "../../schema/internal-api.ts";
import { readPreviewHeader } from "../../schema/preview-tiles.ts";
import { decodeImage } from "../engine/decode/index.ts";
import { previewTiles } from "../engine/preview.ts";
import { fetchImage } from "./fetch-image.ts";
import type { JobContext } from "./job-context.ts";

export async function runPreview(job: LeasedPreview, ctx: JobContext): Promise<PreviewResult> {
  ctx.progress(0, "fetching");
  const bytes = await fetchImage(ctx, job.image);
  ctx.checkpoint();
  ctx.progress(0.3, "decoding");
  const image = decodeImage(bytes);
  ctx.checkpoint();
  ctx.progress(0.5, "tiling");
  const archive = previewTiles(image);
  ctx.checkpoint();
  ctx.progress(0.9, "uploading");
  const { output } = (await ctx.api.urls(job)) as LeasedPreview;
  await ctx.api.upload(output.preview_url, archive);
  return { preview_bytes: archive.length, levels: readPreviewHeader(archive).index.levels.length };
}
