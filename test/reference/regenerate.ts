// Rewrites regionprops.json, scikit-image's measurements of the fixture (measure-fixture.ts), and the
// intensity images they are taken over (tiff/fixture-*.tif): run
// by hand after changing the fixture (`node test/reference/regenerate.ts`; it needs /usr/bin/python3
// with numpy and scikit-image, e.g. Debian's python3-skimage), then review and commit the JSON.
// The tests never run Python: they compare with the committed file.

import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { fixtureLabels } from "./measure-fixture.ts";

const here = new URL(".", import.meta.url);
const { width, height, labels } = fixtureLabels();
const input = JSON.stringify({ width, height, labels: Array.from(labels) });
const python = process.env.PYTHON ?? "/usr/bin/python3";
const output = execFileSync(python, [new URL("regionprops.py", here).pathname], { input, maxBuffer: 64 << 20 });
writeFileSync(new URL("regionprops.json", here), output);
console.log(`regionprops.json written: ${JSON.parse(output.toString()).regions.length} regions; intensity images in tiff/`);
