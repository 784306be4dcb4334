// The load bench's clients: each cycles through one organization's work for a bounded time and
// count, and a sampler watches that organization's predictions meanwhile.
import { encode as encodePng } from "fast-png";
import type { LocalStack } from "../scripts/local-stack.ts";
import { syntheticNuclei } from "../test/fixtures/nuclei-grid.ts";
import { SeededRandom } from "../gpu-runner/training/random.ts";
import { timed } from "./load-requests.ts";

/** Each client stops after this many operations even if time remains. */
const MAX_OPS_PER_CLIENT = 2_000;

/** One organization of the load and what its clients made, for the checks afterwards. */
export interface Org {
  slug: string;
  key: string;
  /** Every image record this org's clients created, and whether its bytes were a valid image. */
  uploads: Map<string, { valid: boolean }>;
  /** Streamed uploads: ready as soon as they are answered, so predictions use them. */
  readyImages: string[];
  predictions: Set<string>;
  segmentations: string[];
}

const SIZE = 96;
const validPng = encodePng({ width: SIZE, height: SIZE, data: syntheticNuclei(SIZE, SIZE, 32, 9).data, depth: 16, channels: 1 }) as Uint8Array<ArrayBuffer>;
/** Noise does not compress: a 16-bit PNG of it above the 8 MiB part size travels as two parts. */
const twoPartPng = (() => {
  const random = new SeededRandom(1);
  const data = new Uint16Array(2048 * 2100).map(() => random.below(65_536));
  return encodePng({ width: 2048, height: 2100, data, depth: 16, channels: 1 }) as Uint8Array<ArrayBuffer>;
})();
/** How many parts each resumable upload's plan had. */
export const partCounts: number[] = [];
/** Not an image: its conversion must end `failed` with a reason, not stay processing. */
const garbage = new Uint8Array(4096).map((_, i) => (i * 7919) % 251);

/** One client of `org`: its actions in turn (starting at its own index) until `until` or the op limit. */
export function client(stack: LocalStack, org: Org, index: number, until: number) {
  const auth = { Authorization: `Bearer ${org.key}` };
  const api = (kind: string, path: string, init: RequestInit = {}) => timed(kind, stack.api + path, { ...init, headers: { ...auth, ...init.headers } });
  const json = (body: unknown) => ({ method: "POST", body: JSON.stringify(body), headers: { "Content-Type": "application/json" } });
  let lastPrediction: string | undefined;
  let listings = 0;
  let resumables = index;

  const actions: (() => Promise<void>)[] = [
    async function multipartUpload() {
      const form = new FormData();
      form.append("file", new File([validPng], `load-${index}.png`));
      const { status, body } = await api("upload multipart", "/upload", { method: "POST", body: form });
      if (status !== 200 && status !== 201) return;
      const id = (body as { image: { id: string } }).image.id;
      org.uploads.set(id, { valid: true });
      org.readyImages.push(id);
    },
    async function resumableUpload() {
      // Of every four resumable uploads one carries bytes that are not an image and one is two parts.
      const turn = resumables++ % 4;
      const valid = turn !== 2;
      const bytes = turn === 2 ? garbage : turn === 3 ? twoPartPng : validPng;
      const { status, body } = await api("upload create", "/upload", json({ name: `load-${index}.png`, size: bytes.length }));
      if (status !== 200 && status !== 201) return;
      const plan = body as { image: { id: string }; upload: { part_size: number; urls: { url: string }[] } };
      org.uploads.set(plan.image.id, { valid });
      partCounts.push(plan.upload.urls.length);
      for (const [i, { url }] of plan.upload.urls.entries()) {
        const part = bytes.subarray(i * plan.upload.part_size, (i + 1) * plan.upload.part_size);
        await timed("upload part PUT", url, { method: "PUT", body: part });
      }
      await api("upload complete", `/upload/${plan.image.id}/complete`, { method: "POST" });
    },
    async function predict() {
      const image = org.readyImages.at(-1 - (index % Math.max(1, org.readyImages.length)));
      if (!image) return;
      const { status, body } = await api("predict submit", "/predict", json({ image_id: image, model_id: "cpsam" }));
      if (status === 200 || status === 201 || status === 202) {
        lastPrediction = (body as { prediction_id: string }).prediction_id;
        org.predictions.add(lastPrediction);
      }
    },
    async function poll() {
      if (!lastPrediction) return;
      const { body } = await api("predict poll", `/predict/${lastPrediction}`);
      const p = body as { status?: string; segmentation_id?: string };
      if (p.status === "COMPLETED" && p.segmentation_id && !org.segmentations.includes(p.segmentation_id)) org.segmentations.push(p.segmentation_id);
    },
    async function list() {
      const paths = ["/images", "/predictions", "/segmentations", "/jobs", "/models"];
      const path = paths[(index + listings++) % paths.length]!;
      await api(`list ${path.slice(1)}`, `${path}?limit=20`);
    },
    async function exportAll() {
      const segmentation = org.segmentations.at(-1);
      if (!segmentation) return;
      for (const file of ["measurements.csv", "rois.geojson", "rois.zip", "masks.png"]) await api(`export ${file}`, `/export/${segmentation}/${file}`);
    },
  ];

  return (async () => {
    for (let op = 0; op < MAX_OPS_PER_CLIENT && Date.now() < until; op++) await actions[(op + index) % actions.length]!();
  })();
}

/** Samples each org's predictions: one-at-a-time means never two SUBMITTED/STARTED at once. */
export function sampleOneAtATime(stack: LocalStack, orgs: Org[], running: () => boolean) {
  const violations: string[] = [];
  let samplesTaken = 0;
  const done = (async () => {
    while (running()) {
      for (const org of orgs) {
        const { status, body } = await timed("sample predictions", `${stack.api}/predictions?limit=50`, { headers: { Authorization: `Bearer ${org.key}` } });
        if (status !== 200) continue;
        samplesTaken++;
        const items = (body as { items: { prediction_id: string; status: string }[] }).items;
        const active = items.filter((p) => p.status === "SUBMITTED" || p.status === "STARTED");
        if (active.length > 1) violations.push(`${org.slug}: ${active.map((p) => `${p.prediction_id} ${p.status}`).join(", ")}`);
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  })();
  return { violations, done, taken: () => samplesTaken };
}
