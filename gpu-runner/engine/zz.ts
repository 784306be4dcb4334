import { flowsFromLabels, FLOW_SCALE } from "./flow-targets.ts";
import { computeMasks } from "./masks/compute-masks.ts";
import { averagePrecision } from "./average-precision.ts";
import { mixedScene, discField } from "../../test/engine/helpers/synthetic-labels.ts";
for (const scene of [mixedScene(), discField(1024, 1024, 400, 12, 22)]) {
  let t = performance.now();
  const flows = flowsFromLabels(scene.labels, scene.width, scene.height);
  const tf = performance.now() - t;
  for (let i = 0; i < flows.length; i++) flows[i]! *= FLOW_SCALE;
  const cellprob = new Float32Array(scene.labels.length).map((_, i) => (scene.labels[i] ? 5 : -5));
  t = performance.now();
  const r = computeMasks(flows, cellprob, scene.width, scene.height);
  const tm = performance.now() - t;
  let max = 0; for (const v of scene.labels) max = Math.max(max, v);
  console.log(scene.width, "objects", max, "found", r.count, "AP", averagePrecision(scene.labels, r.labels).ap, "flows ms", tf.toFixed(0), "masks ms", tm.toFixed(0), JSON.stringify(Object.fromEntries(Object.entries(r.timings).map(([k, v]) => [k, Math.round(v)]))));
}
