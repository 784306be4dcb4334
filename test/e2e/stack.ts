// Starts the local stack of `npm start` in a temporary state directory on a free port: real
// workerd (wrangler dev) with local D1, R2 and Queues, and real runner processes.
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { prepareLocalState, seedBaseModel, startRunner, startWorker, waitUntilServing } from "../../scripts/local-stack.ts";
import { d1 } from "../../scripts/wrangler.ts";

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on("error", reject);
  });
}

export interface LocalStack {
  api: string;
  key: string;
  startRunner(extra?: Record<string, string>): ChildProcess;
  sql(query: string): Record<string, unknown>[];
  stop(): Promise<void>;
}

const stopped = (child: ChildProcess) =>
  child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise<void>((resolve) => child.once("exit", () => resolve()));

export async function startStack(): Promise<LocalStack> {
  const state = mkdtempSync(join(tmpdir(), "cellseg-e2e-"));
  const target = { persistTo: state };
  const runnerToken = `e2e-runner-${crypto.randomUUID()}`;
  const { createdKey } = await prepareLocalState(target, "e2e");
  if (!seedBaseModel(target)) throw new Error("the base model gpu-runner/models/cpsam/cpsam.onnx is missing");
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const children: ChildProcess[] = [startWorker(target, port, { SIGNING_KEY: crypto.randomUUID(), RUNNER_TOKENS: runnerToken, LEASE_SECONDS: "30" })];
  await waitUntilServing(`${url}/api/v1/models`);
  return {
    api: `${url}/api/v1`,
    key: createdKey!,
    startRunner(extra = {}) {
      const runner = startRunner({
        WORKER_URL: url,
        RUNNER_TOKEN: runnerToken,
        EXECUTION_PROVIDER: "cpu",
        LEASE_SECONDS: "30",
        MODEL_CACHE_DIR: join(state, "model-cache"),
        SHUTDOWN_GRACE_SECONDS: "5",
        ...extra,
      });
      children.push(runner);
      return runner;
    },
    sql: (query) => d1(target, query),
    async stop() {
      for (const child of children) child.kill("SIGTERM");
      await Promise.all(children.map(stopped));
      rmSync(state, { recursive: true, force: true });
    },
  };
}

/** A 16-bit fluorescence-like image: bright round nuclei with soft edges on a dim background. */
export function syntheticNuclei(width: number, height: number, spacing = 40, radius = 11): { data: Uint16Array; count: number } {
  const data = new Uint16Array(width * height).fill(300);
  let count = 0;
  for (let cy = spacing / 2; cy + radius < height; cy += spacing) {
    for (let cx = spacing / 2 + ((cy / spacing) % 2) * 6; cx + radius < width; cx += spacing) {
      count++;
      for (let y = Math.floor(cy - radius - 2); y <= cy + radius + 2; y++) {
        for (let x = Math.floor(cx - radius - 2); x <= cx + radius + 2; x++) {
          const d = Math.hypot(x + 0.5 - cx, y + 0.5 - cy);
          const v = 3000 / (1 + Math.exp((d - radius) * 1.5));
          data[y * width + x] = Math.max(data[y * width + x], Math.round(300 + v));
        }
      }
    }
  }
  return { data, count };
}
