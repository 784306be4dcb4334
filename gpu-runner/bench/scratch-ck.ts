import { loadCheckpoint } from "../training/checkpoint.ts";
const s = loadCheckpoint("/work/cpsam-train/checkpoint.bin");
let nan = 0, mx = 0; for (const v of s.params) { if (!Number.isFinite(v)) nan++; else mx = Math.max(mx, Math.abs(v)); }
console.log(s.step, nan, mx, s.params.length);
