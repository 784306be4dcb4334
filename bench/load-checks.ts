// The load bench's checks after the load: nothing stuck, nothing lost, D1 and R2 in agreement.
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import type { LocalStack } from "../scripts/local-stack.ts";
import type { Org } from "./load-clients.ts";
import { REQUEST_TIMEOUT_MS, timed } from "./load-requests.ts";

/** Polls every upload and prediction until none is in progress or the settle time is up. */
export async function settle(stack: LocalStack, orgs: Org[], settleSeconds: number): Promise<{ uploadProblems: string[]; predictionProblems: string[] }> {
  const deadline = Date.now() + settleSeconds * 1000;
  const get = (org: Org, path: string) => timed("settle poll", stack.api + path, { headers: { Authorization: `Bearer ${org.key}` } });
  for (;;) {
    const stuckUploads: string[] = [];
    const unfinished: string[] = [];
    const badUploads: string[] = [];
    const badPredictions: string[] = [];
    for (const org of orgs) {
      for (const [id, { valid }] of org.uploads) {
        const image = (await get(org, `/upload/${id}`)).body as { upload_status?: string; upload_error?: string | null };
        if (image.upload_status === "ready" && !valid) badUploads.push(`${id}: not an image, yet ready`);
        else if (image.upload_status === "failed" && (valid || !image.upload_error)) badUploads.push(`${id}: failed (${image.upload_error ?? "no reason"})`);
        else if (image.upload_status !== "ready" && image.upload_status !== "failed") stuckUploads.push(`${id}: ${image.upload_status}`);
      }
      for (const id of org.predictions) {
        const p = (await get(org, `/predict/${id}`)).body as { status?: string; reason?: string | null; segmentation_id?: string };
        if (p.status === "FAILED" && !p.reason) badPredictions.push(`${id}: FAILED with no reason`);
        else if (p.status === "FAILED") badPredictions.push(`${id}: FAILED (${p.reason}); a valid image should segment`);
        else if (p.status === "COMPLETED" && !p.segmentation_id) badPredictions.push(`${id}: COMPLETED with no segmentation`);
        else if (p.status !== "COMPLETED") unfinished.push(`${id}: ${p.status}`);
      }
    }
    if ((stuckUploads.length === 0 && unfinished.length === 0) || Date.now() > deadline)
      return { uploadProblems: [...stuckUploads, ...badUploads], predictionProblems: [...unfinished, ...badPredictions] };
    await new Promise((r) => setTimeout(r, 2000));
  }
}

// The Worker's own signing code. Its module types its env with Workers types, which the Node
// typecheck does not load, so it is imported by a computed specifier (Node runs it as is).
type SignStorageUrl = (env: { SIGNED_URL_MODE: "worker"; SIGNING_KEY: string }, origin: string, target: { method: "GET"; key: string }) => Promise<string>;
const signedUrlsModule = "../../worker/services/signed-urls.ts";

/**
 * Every key in the local R2 bucket, read from the index miniflare keeps of the bucket's objects
 * (a SQLite file per bucket under the state directory), opened read-only after the load.
 */
function localR2Keys(state: string): Set<string> {
  const dir = join(state, "v3", "r2", "miniflare-R2BucketObject");
  const keys = new Set<string>();
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".sqlite"))) {
    const db = new DatabaseSync(join(dir, file), { readOnly: true });
    try {
      // Other files there belong to miniflare's own bookkeeping, without the objects table.
      if (!db.prepare("SELECT 1 FROM sqlite_master WHERE name = '_mf_objects'").get()) continue;
      for (const row of db.prepare("SELECT key FROM _mf_objects").all()) keys.add(String(row.key));
    } finally {
      db.close();
    }
  }
  return keys;
}

/**
 * Every ready image's bytes are in R2 at its size; every segmentation's artifact is there; and
 * nothing under an image or segmentation prefix in R2 lacks its row (no orphaned bytes).
 */
export async function storageMatchesR2(stack: LocalStack): Promise<{ checked: number; mismatches: string[] }> {
  const { signStorageUrl } = (await import(signedUrlsModule)) as { signStorageUrl: SignStorageUrl };
  const origin = new URL(stack.api).origin;
  const head = async (key: string) => {
    const url = await signStorageUrl({ SIGNED_URL_MODE: "worker", SIGNING_KEY: stack.signingKey }, origin, { method: "GET", key });
    const response = await fetch(url, { method: "HEAD", signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    return response.ok ? Number(response.headers.get("Content-Length")) : null;
  };
  const mismatches: string[] = [];
  const images = stack.sql("SELECT id, r2_key, size FROM images WHERE status = 'ready'") as { id: string; r2_key: string; size: number }[];
  for (const image of images) {
    const size = await head(image.r2_key);
    if (size !== image.size) mismatches.push(`image ${image.id}: D1 says ${image.size} bytes, R2 holds ${size ?? "nothing"}`);
  }
  const artifacts = stack.sql("SELECT id, artifact_key FROM segmentations") as { id: string; artifact_key: string }[];
  for (const s of artifacts) if ((await head(s.artifact_key)) === null) mismatches.push(`segmentation ${s.id}: artifact ${s.artifact_key} missing from R2`);
  const imageKeys = new Set((stack.sql("SELECT r2_key FROM images") as { r2_key: string }[]).map((r) => r.r2_key));
  const artifactPrefixes = new Set(artifacts.map((s) => s.artifact_key.slice(0, s.artifact_key.lastIndexOf("/") + 1)));
  const r2 = localR2Keys(stack.state);
  for (const key of r2) {
    if (/^orgs\/[^/]+\/images\//.test(key) && !imageKeys.has(key)) mismatches.push(`R2 object ${key} has no image row`);
    if (/^orgs\/[^/]+\/segmentations\//.test(key) && !artifactPrefixes.has(key.slice(0, key.lastIndexOf("/") + 1)))
      mismatches.push(`R2 object ${key} has no segmentation row`);
  }
  return { checked: r2.size, mismatches };
}
