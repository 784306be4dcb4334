import { readFileSync, readdirSync } from "node:fs";
import { decodeImage } from "../engine/decode/index.ts";
const dir = "/work/shared/data/nuclei/kromp/images";
for (const f of readdirSync(dir)) {
  const d = decodeImage(readFileSync(`${dir}/${f}`));
  if (d.channels === 1) { console.log(f, 1); continue; }
  const plane = d.width * d.height; const sums = [0, 0, 0]; let diff = 0;
  for (let c = 0; c < 3; c++) for (let i = 0; i < plane; i++) sums[c] += d.data[c * plane + i];
  for (let i = 0; i < plane; i++) diff = Math.max(diff, Math.abs(d.data[i] - d.data[plane + i]), Math.abs(d.data[i] - d.data[2 * plane + i]));
  console.log(f, d.channels, sums.map((s) => (s / plane).toFixed(1)).join(","), "maxdiff", diff);
}
