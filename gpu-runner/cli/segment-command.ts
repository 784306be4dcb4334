// npm run segment -- <image> [--model auto|<name>|<onnx>|reference] [--diameter D|auto|none] [--out dir] [--channels 0,1]
//   [--page N] [--provider auto|cuda|webgpu|cpu] [--cellprob-threshold T] [--flow-threshold T]
//   [--min-size N] [--niter N] [--block-size N] [--memory-mb N]
// Writes <name>_masks.png (16-bit labels; <name>_masks.tif, 32-bit, above 65,535 cells),
// <name>_rois.geojson and <name>_measurements.csv. The image is read through the decoders' region
// reader (a TIFF tile by tile, never the whole file); images whose network input may pass
// SINGLE_PASS_PIXELS (fitsOnePass), or any with --block-size, are segmented block by block in bounded memory (engine/blocks/), and every output
// is streamed to disk.
// The command behind segment.ts, which loads it once Node's compile cache is on.
import { mkdirSync } from "node:fs";
import { basename, extname, join } from "node:path";
import { parseArgs } from "node:util";
import type { Roi } from "../../schema/roi.ts";
import { fitsOnePass, SINGLE_PASS_PIXELS, segmentInBlocks } from "../engine/blocks/segment-blocks.ts";
import { fileSource, openImageRegions } from "../../common/decode/region-reader.ts";
import type { ExecutionProviderChoice } from "../engine/model.ts";
import type { ModalityDecision } from "../engine/modality.ts";
import { chooseModel } from "../engine/model-choice.ts";
import { surveyModality } from "../engine/blocks/image-survey.ts";
import { recommendedModel } from "../../schema/model-recommendations.ts";
import { writeLabelPng } from "../engine/outputs/label-png.ts";
import { PNG_MAX_LABEL } from "../../schema/label-png-limit.ts";
import { writeLabelTiff } from "../engine/outputs/label-tiff-file.ts";
import { writeMeasurementsCsv, writeRoisGeoJson } from "../engine/outputs/rois-files.ts";
import { startComputeThread } from "../engine/compute-thread/compute-thread.ts";
import { segmentImage, type SegmentParams } from "../engine/segment.ts";
import { probeImageSource } from "../../common/decode/probe.ts";
import type { DiameterBasis } from "../../schema/diameter-basis.ts";
import { MASK_FLAG_OPTIONS, maskParamsFromFlags, numberFlag } from "./mask-flags.ts";

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      model: { type: "string" },
      diameter: { type: "string" },
      out: { type: "string", default: "." },
      channels: { type: "string" },
      page: { type: "string" },
      provider: { type: "string", default: "auto" },
      "block-size": { type: "string" },
      "memory-mb": { type: "string" },
      "pixel-size": { type: "string" },
      ...MASK_FLAG_OPTIONS,
    },
  });
  if (positionals.length !== 1)
    throw new Error(
      "usage: npm run segment -- <image> [--model <name>|<onnx>|reference] [--diameter D|auto|none] [--pixel-size UM] [--out dir] [--block-size N]",
    );
  const imagePath = positionals[0]!;
  const params: Partial<SegmentParams> = maskParamsFromFlags(values);
  // Like the service: without a diameter the engine estimates it ("auto"); "none" keeps scale 1.
  if (values.diameter === undefined || values.diameter === "auto") params.diameter = "auto";
  else if (values.diameter !== "none") params.diameter = numberFlag(values.diameter, "--diameter");
  if (values.channels !== undefined) params.channels = values.channels.split(",").map((c) => numberFlag(c, "--channels"));

  // The compute thread and its mask threads start now, while the model loads and the image decodes,
  // rather than at the first mask reconstruction, which would then run mostly on one thread.
  void startComputeThread();
  const started = performance.now();
  const file = await fileSource(imagePath);
  const regions = await openImageRegions(file, values.page === undefined ? {} : { page: numberFlag(values.page, "--page") });
  // As the service: the given pixel size, else the file's trusted one, maps the model's object size in µm to pixels.
  if (values["pixel-size"] !== undefined) params.pixelSize = { um: numberFlag(values["pixel-size"], "--pixel-size"), from: "--pixel-size" };
  else {
    const { pixelSize } = await probeImageSource(file, { regions: true });
    if (pixelSize) params.pixelSize = { um: (pixelSize.x + pixelSize.y) / 2, from: `the file (${pixelSize.source})` };
  }
  // Without --model, the public model recommended for what the image is (as the service's clients pick).
  let modelName = values.model;
  if (modelName === undefined || modelName === "auto") {
    const reading = await surveyModality(regions);
    modelName = recommendedModel(reading.modality);
    console.log(`model ${modelName}: recommended for ${reading.modality} (${reading.reason})`);
  }
  const model = await chooseModel(modelName, values.provider as ExecutionProviderChoice);
  const decodedAt = performance.now();
  const blockSize = values["block-size"] === undefined ? undefined : numberFlag(values["block-size"], "--block-size");
  const memoryMb = values["memory-mb"] === undefined ? undefined : numberFlag(values["memory-mb"], "--memory-mb");
  const blockwise =
    blockSize !== undefined ||
    !fitsOnePass(
      regions.width * regions.height,
      params.diameter === "auto" ? undefined : (params.diameter ?? model.manifest.diameter),
      model.manifest.diameter,
      SINGLE_PASS_PIXELS,
    );
  let rois: Roi[];
  let result: {
    width: number;
    height: number;
    confluency: number;
    timings: Record<string, number>;
    diameter: number;
    diameterBasis: DiameterBasis;
    modality?: ModalityDecision;
    blocks?: number;
    glassBlocks?: number;
  };
  if (blockwise) {
    rois = [];
    let lastReport = 0;
    result = await segmentInBlocks(regions, model, params, {
      ...(blockSize !== undefined && { coreSide: blockSize }),
      ...(memoryMb !== undefined && { memoryBudgetBytes: memoryMb * 2 ** 20 }),
      onCells: (cells) => void rois.push(...cells),
      onBlock: (_block, index, total) => {
        if (performance.now() - lastReport < 5000 && index + 1 < total) return;
        lastReport = performance.now();
        console.log(`block ${index + 1}/${total}, ${rois.length} cells so far`);
      },
    });
  } else {
    const whole = await segmentImage(await regions.readRegion(0, 0, regions.width, regions.height), model, params);
    ({ rois } = whole);
    result = whole;
  }

  const name = basename(imagePath, extname(imagePath));
  mkdirSync(values.out, { recursive: true });
  const context = {
    segmentationId: name,
    segmentationSource: "model" as const,
    modelName: `${model.manifest.name}@${model.manifest.version}`,
    imageName: basename(imagePath),
    imageWidth: result.width,
    imageHeight: result.height,
    confluency: result.confluency,
  };
  await file.close();
  const outputs = {
    masks: join(values.out, `${name}_masks.${rois.length > PNG_MAX_LABEL ? "tif" : "png"}`),
    geojson: join(values.out, `${name}_rois.geojson`),
    csv: join(values.out, `${name}_measurements.csv`),
  };
  if (rois.length > PNG_MAX_LABEL)
    await writeLabelTiff(outputs.masks, result.width, result.height, rois, `${context.modelName} labels of ${context.imageName}`);
  else await writeLabelPng(outputs.masks, result.width, result.height, rois);
  await writeRoisGeoJson(outputs.geojson, rois, context);
  await writeMeasurementsCsv(outputs.csv, rois, context);
  const timings = Object.entries(result.timings)
    .map(([stage, ms]) => `${stage} ${ms.toFixed(0)} ms`)
    .join(", ");
  console.log(
    `${basename(imagePath)}: ${result.width}x${result.height}x${regions.channels}, ${rois.length} cells, confluency ${(100 * result.confluency).toFixed(1)}%${blockwise ? ` (block by block: ${result.blocks} blocks, ${result.glassBlocks} of them glass)` : ""}`,
  );
  // Block by block, the survey's sample windows decide the modality and diameter for every block, and on a slide that is
  // mostly glass they may see little tissue: the line shows what they decided.
  const decided = result.modality;
  const modality = decided ? `modality ${decided.modality} (${decided.source}${decided.reason ? `: ${decided.reason}` : ""}), ` : "";
  console.log(`${modality}diameter ${result.diameter.toFixed(1)} px: ${result.diameterBasis.reason}`);
  console.log(`model ${context.modelName} on ${model.executionProvider}; opened in ${(decodedAt - started).toFixed(0)} ms (incl. model load), ${timings}`);
  for (const path of Object.values(outputs)) console.log(`wrote ${path}`);
}

main().catch((error: unknown) => {
  console.error(`segment: ${(error as Error).message}`);
  process.exit(1);
});
