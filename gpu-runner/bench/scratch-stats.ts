import { readLabelledDirectory } from "../training/labelled-images.ts";
import { medianObjectDiameter } from "../training/object-diameter.ts";
for (const set of ["bbbc039", "kromp"]) {
  const t = performance.now();
  const pairs = readLabelledDirectory(`/work/shared/data/nuclei/${set}`);
  console.log(set, pairs.length, "load ms", (performance.now() - t).toFixed(0));
  for (const p of pairs.slice(0, set === "kromp" ? 42 : 5)) {
    let mx = 0; for (const v of p.image) mx = Math.max(mx, v);
    console.log(p.id, p.width, p.height, "diam", medianObjectDiameter(p.labels).toFixed(1), "max", mx);
  }
}
