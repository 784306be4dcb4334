// npm run segment -- <image> [--model <onnx>|reference] [--diameter D|auto|none] [--out dir] [--channels 0,1]
//   [--page N] [--provider auto|cuda|webgpu|cpu] [--cellprob-threshold T] [--flow-threshold T]
//   [--min-size N] [--niter N]
// Writes <name>_masks.png (16-bit labels), <name>_rois.geojson and <name>_measurements.csv.
//
// A fresh process spent a fifth of its time stripping types from and compiling the engine's
// modules. This entry turns on Node's module compile cache (os.tmpdir()/node-compile-cache, or
// NODE_COMPILE_CACHE) before it loads the command, so later runs read that work from disk; the
// import is dynamic because static imports are compiled before any code here runs. The mask
// worker threads inherit the cache through the environment.
import { enableCompileCache } from "node:module";

const cache = enableCompileCache();
if (cache.directory) process.env.NODE_COMPILE_CACHE = cache.directory;
await import("./segment-command.ts");
