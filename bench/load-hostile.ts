// bench:load's "hostile neighbour" run (`npm run bench:load -- --hostile-neighbour`): one
// organization's predictions, one after another, timed from submit to COMPLETED, first alone
// ("quiet"), then while a second organization sends issue 24's crafted files as fast as they are
// answered: TIFF strips sharing one blob of LZW data as uploads, and a comb polygon (GeoJSON and
// ImageJ .roi), 100,000 full-image rectangles, labels at the top and bottom edges, and ZIP entries
// sharing one stream as annotation imports; and issue 35's: a diameter and a cell expansion past the
// limits (422), a TIFF with 982 KB of JPEGTables, 7,000 repeated "features" members, an import form
// with 10,000 file parts (400); and issue 44's: the mask parameters that froze a runner (niter
// 10,000 at 300 px, cellprob_threshold -20: 422), a diameter beside `params` (422), a label image of
// one object the size of the image (422 for its training cost) and a wrong API key (401).
// Target: the victim's p99 within 2x of the quiet run, every crafted file refused with a 4xx,
// nothing answered 5xx.
import { encode as encodePng } from "fast-png";
import type { LocalStack } from "../scripts/local-stack.ts";
import type { AdminBackend } from "../scripts/admin-backends.ts";
import { hostileFiles, stripsSharingLzwData } from "../test/fixtures/hostile-images.ts";
import {
  combGeoJson,
  combRoi,
  deflateAfterEmptyBlocks,
  fullImageRectangles,
  labelsAtTopAndBottom,
  rectangleRoi,
  repeatedFeaturesMembers,
  zipOfOverlappingEntries,
} from "../test/fixtures/hostile-annotations.ts";
import { syntheticNuclei } from "../test/fixtures/nuclei-grid.ts";
import { countBy } from "./load-requests.ts";

/** The victim's image: a microscope frame's worth of work for each prediction (about 2 s on the 2-core CPU). */
const VICTIM_SIDE = 768;

const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] ?? Number.NaN;

function pngFile(width: number, height: number, data: Uint16Array): Uint8Array<ArrayBuffer> {
  return encodePng({ width, height, data, depth: 16, channels: 1 }) as Uint8Array<ArrayBuffer>;
}

async function upload(stack: LocalStack, key: string, name: string, bytes: Uint8Array): Promise<{ status: number; id?: string }> {
  const form = new FormData();
  form.append("file", new File([bytes as Uint8Array<ArrayBuffer>], name));
  const response = await fetch(`${stack.api}/upload`, { method: "POST", headers: { Authorization: `Bearer ${key}` }, body: form });
  const body = (await response.json().catch(() => null)) as { image?: { id: string } } | null;
  return { status: response.status, id: body?.image?.id };
}

/** Submit, then poll every 100 ms until COMPLETED: milliseconds from submit to done. */
async function onePrediction(stack: LocalStack, key: string, imageId: string): Promise<number> {
  const headers = { Authorization: `Bearer ${key}`, "Content-Type": "application/json" };
  const started = performance.now();
  const submitted = await fetch(`${stack.api}/predict`, {
    method: "POST",
    headers,
    body: JSON.stringify({ image_id: imageId, model_id: "cpsam", params: { diameter: 18 } }),
  });
  if (submitted.status !== 202) throw new Error(`the victim's predict answered ${submitted.status}: ${await submitted.text()}`);
  const { prediction_id } = (await submitted.json()) as { prediction_id: string };
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    const { status } = (await (await fetch(`${stack.api}/predict/${prediction_id}`, { headers })).json()) as { status: string };
    if (status === "COMPLETED") return performance.now() - started;
    if (status === "FAILED") throw new Error(`the victim's prediction ${prediction_id} FAILED`);
  }
}

async function predictionsFor(stack: LocalStack, key: string, imageId: string, seconds: number): Promise<number[]> {
  const until = Date.now() + seconds * 1000;
  const times: number[] = [];
  while (Date.now() < until) times.push(await onePrediction(stack, key, imageId));
  return times;
}

export async function hostileNeighbour(stack: LocalStack, backend: AdminBackend, seconds: number): Promise<{ lines: string[]; failed: number }> {
  const lines: string[] = [];
  const org = async (slug: string) => {
    await backend.createOrganization(slug, { plan: "free", storageCap: 1000, analysisCap: 100_000 });
    return (await backend.createKey(slug)).key;
  };
  const victim = await org("victim");
  const hostile = await org("hostile");
  const { data } = syntheticNuclei(VICTIM_SIDE, VICTIM_SIDE);
  const victimImage = (await upload(stack, victim, "victim.png", pngFile(VICTIM_SIDE, VICTIM_SIDE, data))).id!;
  // The crafted annotations are aimed at images of the size each was measured against.
  const comb = (await upload(stack, hostile, "comb.png", pngFile(256, 4, new Uint16Array(256 * 4)))).id!;
  const frame = (await upload(stack, hostile, "frame.png", pngFile(2560, 2160, new Uint16Array(2560 * 2160)))).id!;
  const square = (await upload(stack, hostile, "square.png", pngFile(2048, 2048, new Uint16Array(2048 * 2048)))).id!;
  // Every crafted file is made once, before the clock starts: making them costs this process CPU.
  const sharedStrips = stripsSharingLzwData(64, 64, 20_000_000);
  const jpegTables = hostileFiles().find((f) => f.name.startsWith("TIFF: 982 KB of JPEGTables"))!.bytes;
  const auth = { Authorization: `Bearer ${hostile}` };
  // Issue 35's parameters past the limits, on an image of the hostile organization (422 each).
  const predictPast = (params: object) => async () =>
    (
      await fetch(`${stack.api}/predict`, {
        method: "POST",
        headers: { ...auth, "Content-Type": "application/json" },
        body: JSON.stringify({ image_id: comb, model_id: "cpsam", params }),
      })
    ).status;
  // An import whose form repeats its file part 10,000 times (400 at the second).
  const boundary = "----hostile-neighbour";
  const part = (name: string, value: string, file?: string) =>
    `--${boundary}\r\nContent-Disposition: form-data; name="${name}"${file ? `; filename="${file}"` : ""}\r\n\r\n${value}\r\n`;
  const repeatedParts = (image: string) =>
    `${part("image_id", image)}${part("file", '{"type":"FeatureCollection","features":[]}', "a.geojson").repeat(10_000)}--${boundary}--\r\n`;
  const crafted: { name: string; send: () => Promise<number> }[] = [
    { name: "upload: TIFF strips sharing LZW data", send: async () => (await upload(stack, hostile, "shared.tif", sharedStrips)).status },
    { name: "upload: TIFF with 982 KB of JPEGTables", send: async () => (await upload(stack, hostile, "tables.tif", jpegTables)).status },
    { name: "predict: diameter 1000 px", send: predictPast({ diameter: 1000 }) },
    { name: "predict: cell_expansion_um 500 at 0.125 µm", send: predictPast({ diameter: 18, cell_expansion_um: 500, pixel_size_um: 0.125 }) },
    {
      name: "predict: niter 10,000 at 300 px, cellprob_threshold -20",
      send: predictPast({ diameter: 300, niter: 10_000, cellprob_threshold: -20, flow_threshold: 0 }),
    },
    {
      name: "predict: a diameter beside params",
      send: async () =>
        (
          await fetch(`${stack.api}/predict`, {
            method: "POST",
            headers: { ...auth, "Content-Type": "application/json" },
            body: JSON.stringify({ image_id: comb, model_id: "cpsam", diameter: 1_000_000 }),
          })
        ).status,
    },
    { name: "any route: a wrong API key", send: async () => (await fetch(`${stack.api}/models`, { headers: { Authorization: "Bearer csk_wrong" } })).status },
    {
      name: "import: 10,000 repeated file parts",
      send: async () =>
        (
          await fetch(`${stack.api}/segmentation`, {
            method: "POST",
            headers: { ...auth, "Content-Type": `multipart/form-data; boundary=${boundary}` },
            body: repeatedParts(comb),
          })
        ).status,
    },
    ...[
      { name: "import: comb GeoJSON", image: comb, file: "comb.geojson", bytes: combGeoJson(100_000, 256, 4) },
      { name: "import: comb .roi", image: comb, file: "comb.roi", bytes: combRoi(100_000, 256, 4) },
      { name: "import: 100,000 full-image rectangles", image: frame, file: "frame.geojson", bytes: fullImageRectangles(100_000, 2560, 2160) },
      { name: "import: labels at the top and bottom edges", image: square, file: "edges.tif", bytes: labelsAtTopAndBottom(2048, 2048, 65_535) },
      { name: "import: one object the size of the image", image: square, file: "whole.png", bytes: pngFile(2048, 2048, new Uint16Array(2048 * 2048).fill(1)) },
      { name: 'import: 7,000 repeated "features" members', image: frame, file: "repeated.geojson", bytes: repeatedFeaturesMembers(7_000, 1, 2560, 2160) },
      {
        name: "import: ZIP entries sharing one stream",
        image: comb,
        file: "shared.zip",
        bytes: zipOfOverlappingEntries(100_000, "cell.roi", deflateAfterEmptyBlocks(6_000_000, rectangleRoi(0, 0, 2, 2)), 8, 64),
      },
    ].map(({ name, image, file, bytes }) => ({
      name,
      send: async () => {
        const form = new FormData();
        form.append("image_id", image);
        form.append("file", new File([bytes as Uint8Array<ArrayBuffer>], file));
        return (await fetch(`${stack.api}/segmentation`, { method: "POST", headers: { Authorization: `Bearer ${hostile}` }, body: form })).status;
      },
    })),
  ];

  await onePrediction(stack, victim, victimImage); // warms the runner's model cache
  const quiet = await predictionsFor(stack, victim, victimImage, seconds);
  const answers = new Map<string, number[]>();
  let attacking = true;
  const attack = (async () => {
    for (let i = 0; attacking; i++) {
      const { name, send } = crafted[i % crafted.length]!;
      const status = await send().catch(() => 0);
      answers.set(name, [...(answers.get(name) ?? []), status]);
    }
  })();
  const underAttack = await predictionsFor(stack, victim, victimImage, seconds);
  attacking = false;
  await attack;

  const ratio = percentile(underAttack, 99) / percentile(quiet, 99);
  lines.push(
    `hostile neighbour: the victim's predictions (${VICTIM_SIDE}x${VICTIM_SIDE}, submit to COMPLETED), ${seconds} s alone, then ${seconds} s beside the crafted files`,
  );
  lines.push(`  quiet:          ${quiet.length} predictions, p50 ${percentile(quiet, 50).toFixed(0)} ms, p99 ${percentile(quiet, 99).toFixed(0)} ms`);
  lines.push(
    `  beside hostile: ${underAttack.length} predictions, p50 ${percentile(underAttack, 50).toFixed(0)} ms, p99 ${percentile(underAttack, 99).toFixed(0)} ms`,
  );
  lines.push(`  p99 ratio ${ratio.toFixed(2)} (target <= 2)`);
  const problems: string[] = [];
  for (const [name, statuses] of answers) {
    lines.push(`  ${name}: ${countBy(statuses)}`);
    for (const status of statuses) if (status < 400 || status >= 500) problems.push(`${name} answered ${status === 0 ? "nothing" : status}`);
  }
  let failed = 0;
  for (const [name, bad] of [
    ["p99 within 2x of the quiet run", ratio <= 2 ? [] : [`ratio ${ratio.toFixed(2)}`]],
    ["every crafted file refused with a 4xx", problems],
  ] as const) {
    lines.push(`${bad.length === 0 ? "ok  " : "FAIL"} ${name}${bad.length ? `: ${[...new Set(bad)].slice(0, 5).join("; ")}` : ""}`);
    if (bad.length) failed++;
  }
  return { lines, failed };
}
