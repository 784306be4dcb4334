// Fetching a job's image: what the lease says about it (the upload probe's size and channels) is
// checked against the decoder's limits before a byte is downloaded, and the download stops at
// the runner's input limit, so an image no runner could decode fails its job with the reason at
// once instead of filling this runner's memory first.
import type { LeasedPrediction } from "../../schema/internal-api.ts";
import { checkImageSize, ImageDecodeError } from "../../schema/image-formats/index.ts";
import { DownloadTooLargeError } from "./internal-api.ts";
import type { JobContext } from "./job-context.ts";

type LeasedImage = LeasedPrediction["image"];

export async function fetchImage(ctx: Pick<JobContext, "api" | "maxInputBytes">, image: LeasedImage): Promise<Uint8Array> {
  if (image.width !== null && image.height !== null && image.channels !== null) checkImageSize(image.width, image.height, image.channels);
  try {
    return await ctx.api.download(image.url, ctx.maxInputBytes);
  } catch (error) {
    if (!(error instanceof DownloadTooLargeError)) throw error;
    const size = error.size === null ? "larger than" : `${error.size} bytes, more than`;
    throw new ImageDecodeError(`image file ${image.name} is ${size} the ${error.limit} bytes this runner downloads (MAX_INPUT_MB)`, "too-large");
  }
}
