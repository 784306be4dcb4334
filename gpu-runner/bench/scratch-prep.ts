import { readLabelledDirectory } from "../training/labelled-images.ts";
import { prepareImage } from "../training/prepare-image.ts";
for (const set of ["bbbc039", "kromp"]) {
  const pairs = readLabelledDirectory(`/work/shared/data/nuclei/${set}`);
  for (const p of pairs.slice(0, 3)) { const t = performance.now(); const r = prepareImage(p, 24); console.log(p.id, (performance.now() - t).toFixed(0), "ms", r.scaleToModel.toFixed(3)); }
}
