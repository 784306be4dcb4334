// npm run runner: pulls jobs from WORKER_URL with RUNNER_TOKEN until SIGTERM/SIGINT.
import * as ort from "onnxruntime-node";
import { startComputeThread } from "../engine/compute-thread/compute-thread.ts";
import { limitMaskThreads } from "../engine/masks/mask-threads.ts";
import { CONFIG_HELP, readConfig } from "./config.ts";
import { internalApi } from "./internal-api.ts";
import { ModelCache } from "./model-cache.ts";
import { Runner } from "./runner.ts";

if (process.argv.includes("--help") || process.argv.includes("-h")) {
  console.log(CONFIG_HELP);
  process.exit(0);
}

let config: ReturnType<typeof readConfig>;
try {
  config = readConfig(process.argv.slice(2));
} catch (error) {
  console.error(`error: ${(error as Error).message}\n\n${CONFIG_HELP}`);
  process.exit(2);
}

const backends = ort.listSupportedBackends().map((b) => `${b.name}${b.bundled ? "" : " (not installed)"}`);
const threads = config.threads ? `; ${config.threads} thread${config.threads > 1 ? "s" : ""} a session and for masks` : "";
console.error(`[runner] onnxruntime-node ${ort.env.versions.common}; backends: ${backends.join(", ")}; asked for: ${config.executionProvider}${threads}`);

limitMaskThreads(config.threads);
// Masks are traced in a compute thread (the main loop keeps the heartbeats): started before the first job needs it.
void startComputeThread();
const models = new ModelCache(config.modelCacheDir, config.modelCacheBytes, config.executionProvider, config.threads);
const runner = new Runner(config, internalApi(config), models);
let signals = 0;
const onSignal = (signal: string) => {
  if (++signals > 1) process.exit(130); // a second Ctrl-C: leave now, leases will expire
  console.error(`[runner] ${signal}: finishing or handing back the jobs in hand (again to leave now)`);
  void runner.stop();
};
process.on("SIGTERM", () => onSignal("SIGTERM"));
process.on("SIGINT", () => onSignal("SIGINT"));

await runner.run();
console.error(`[runner] stopped: ${runner.stats.completed} completed, ${runner.stats.failed} failed, ${runner.stats.released} handed back`);
