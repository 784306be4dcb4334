// npm run bench:measure [-- --cells 20000 --channels 1,3 --runs 3]
// What the measurement groups cost the runner, per segmentation: the intensity statistics per
// channel from the label image (a model's segmentation, engine/intensity.ts), the same from the
// outlines (an imported segmentation's measurement job), and a cell expansion of 5 px with the
// cytoplasm's intensities (engine/cell-expansion.ts). Synthetic nuclei, no ../shared needed.
// Prints milliseconds per 10,000 cells for each channel count (least of --runs): the difference
// between two counts is what a channel adds.
import { parseArgs } from "node:util";
import type { DecodedImage } from "../common/decode/index.ts";
import { renumberInRasterOrder } from "../common/geometry/label-image.ts";
import { measureRois } from "../common/geometry/roi-measure.ts";
import { attachCells } from "../gpu-runner/engine/cell-expansion.ts";
import { measureIntensity, measureOutlineIntensity } from "../gpu-runner/engine/intensity.ts";
import { discField } from "../test/fixtures/labels.ts";

const { values } = parseArgs({
  options: {
    cells: { type: "string", default: "20000" },
    channels: { type: "string", default: "1,3" },
    runs: { type: "string", default: "3" },
  },
});
const wanted = Number(values.cells);
const runs = Number(values.runs);
// About 1 pixel in 3 a nucleus of radius 5 to 8: the density of a crowded fluorescence field.
const side = Math.ceil(Math.sqrt(wanted * 3 * Math.PI * 6.5 ** 2));
const scene = discField(side, side, wanted, 5, 8, 7);
const count = renumberInRasterOrder(scene.labels);
const rois = measureRois(scene.labels, side, side, count);
console.log(`${count} nuclei of radius 5-8 px in ${side}² (${((side * side) / 1e6).toFixed(1)} MP); least of ${runs} runs`);

function image(channels: number): DecodedImage {
  const plane = side * side;
  const data = new Float32Array(channels * plane);
  for (let i = 0; i < data.length; i++) data[i] = ((i * 2_654_435_761) >>> 20) + (scene.labels[i % plane]! ? 1000 : 0);
  return { width: side, height: side, channels, bitDepth: 16, sampleFormat: "uint", data };
}

function least(work: () => void): number {
  let best = Number.POSITIVE_INFINITY;
  for (let run = 0; run < runs; run++) {
    const started = performance.now();
    work();
    best = Math.min(best, performance.now() - started);
  }
  return best;
}

const per10k = (ms: number) => (ms * 10_000) / count;
for (const channels of values.channels.split(",").map(Number)) {
  const pixels = image(channels);
  const fromLabels = least(() => measureIntensity(pixels, scene.labels, count));
  const fromOutlines = least(() => measureOutlineIntensity(pixels, rois));
  const cells = least(() => attachCells(rois, pixels, scene.labels, 5));
  console.log(
    `${channels} channel${channels === 1 ? "" : "s"}, ms per 10k cells: intensity from labels ${per10k(fromLabels).toFixed(1)}, ` +
      `from outlines ${per10k(fromOutlines).toFixed(1)}, cell expansion 5 px with cytoplasm intensities ${per10k(cells).toFixed(1)}`,
  );
}
