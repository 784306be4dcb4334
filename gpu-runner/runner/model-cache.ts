// Models are fetched once per (id, version) into a disk cache, and their sessions kept loaded.
// The disk cache is bounded: least recently used versions are removed past its size.
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { LeasedPrediction } from "../../schema/internal-api.ts";
import { type ExecutionProviderChoice, type LoadedModel, loadModelFromBytes, type ModelManifest, parseManifest } from "../engine/model.ts";
import type { InternalApi } from "./internal-api.ts";

const LOADED_SESSIONS = 4;

interface CachedModelFiles {
  onnx: Uint8Array;
  manifest: ModelManifest;
}

export class ModelCache {
  private readonly dir: string;
  private readonly maxBytes: number;
  private readonly provider: ExecutionProviderChoice;
  private readonly threads: number | undefined;
  private readonly sessions = new Map<string, Promise<LoadedModel>>();
  private readonly downloads = new Map<string, Promise<string>>();

  /** `threads`: each session's onnxruntime threads (engine/model.ts); undefined: onnxruntime's choice. */
  constructor(dir: string, maxBytes: number, provider: ExecutionProviderChoice, threads?: number) {
    this.dir = dir;
    this.maxBytes = maxBytes;
    this.provider = provider;
    this.threads = threads;
    mkdirSync(dir, { recursive: true });
  }

  private versionDir(model: LeasedPrediction["model"]): string {
    const safe = (s: string) => s.replace(/[^A-Za-z0-9._-]/g, "_");
    return join(this.dir, safe(model.id), safe(model.version));
  }

  /** The model's directory, downloading it first if this runner has not seen that version. */
  async files(api: InternalApi, model: LeasedPrediction["model"]): Promise<string> {
    const dir = this.versionDir(model);
    if (existsSync(join(dir, "model.json"))) {
      const now = new Date();
      utimesSync(dir, now, now);
      return dir;
    }
    const key = dir;
    let pending = this.downloads.get(key);
    if (!pending) {
      pending = (async () => {
        const [onnx, manifest] = await Promise.all([api.download(model.files.onnx), api.download(model.files.manifest)]);
        parseManifest(new TextDecoder().decode(manifest), `manifest of ${model.name}@${model.version}`);
        const staging = `${dir}.partial-${process.pid}`;
        mkdirSync(staging, { recursive: true });
        writeFileSync(join(staging, "model.onnx"), onnx);
        writeFileSync(join(staging, "model.json"), manifest);
        // A rename is atomic: another runner sharing the cache never sees half a model.
        rmSync(dir, { recursive: true, force: true });
        renameSync(staging, dir);
        this.evict(dir);
        return dir;
      })().finally(() => this.downloads.delete(key));
      this.downloads.set(key, pending);
    }
    return pending;
  }

  async read(api: InternalApi, model: LeasedPrediction["model"]): Promise<CachedModelFiles> {
    const dir = await this.files(api, model);
    return {
      onnx: new Uint8Array(readFileSync(join(dir, "model.onnx"))),
      manifest: parseManifest(readFileSync(join(dir, "model.json"), "utf8"), `${dir}/model.json`),
    };
  }

  /** A loaded inference session for the model, shared by the jobs that use it. */
  async session(api: InternalApi, model: LeasedPrediction["model"]): Promise<LoadedModel> {
    const key = `${model.id}@${model.version}`;
    let loaded = this.sessions.get(key);
    if (!loaded) {
      loaded = this.read(api, model).then(({ onnx, manifest }) =>
        loadModelFromBytes(onnx, manifest, { executionProvider: this.provider, threads: this.threads }),
      );
      loaded.catch(() => this.sessions.delete(key));
      this.sessions.set(key, loaded);
      if (this.sessions.size > LOADED_SESSIONS) {
        // More sessions than LOADED_SESSIONS, so there is an oldest.
        const oldest = this.sessions.keys().next().value!;
        const evicted = this.sessions.get(oldest);
        this.sessions.delete(oldest);
        evicted?.then((m) => m.session.release()).catch(() => undefined);
      }
    } else {
      // Re-insert to mark it most recently used.
      this.sessions.delete(key);
      this.sessions.set(key, loaded);
    }
    return loaded;
  }

  private evict(keep: string): void {
    const versions: { path: string; bytes: number; used: number }[] = [];
    for (const id of readdirSync(this.dir)) {
      for (const version of readdirSync(join(this.dir, id))) {
        const path = join(this.dir, id, version);
        if (path.includes(".partial-")) continue;
        const bytes = readdirSync(path).reduce((n, f) => n + statSync(join(path, f)).size, 0);
        versions.push({ path, bytes, used: statSync(path).mtimeMs });
      }
    }
    let total = versions.reduce((n, v) => n + v.bytes, 0);
    for (const v of versions.sort((a, b) => a.used - b.used)) {
      if (total <= this.maxBytes) break;
      if (v.path === keep) continue;
      rmSync(v.path, { recursive: true, force: true });
      total -= v.bytes;
    }
  }
}
