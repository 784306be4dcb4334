// `images` shows each image's cell count (its most recent segmentation's) and how many segmentations
// it has; `segmentation <id>` shows one segmentation's state, its measurements' included, which the
// import's message points at, and a whole slide's blocks. Against a fake service: only the answers
// the commands read.
import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { imagesCommand } from "../../client/commands/images.ts";
import { segmentationCommand } from "../../client/commands/segmentation.ts";
import { Http } from "../../client/http.ts";
import type { ImageRecord, SegmentationRecord } from "../../schema/api-records.ts";

function collect(): { out: Writable; text: () => string } {
  let text = "";
  const out = new Writable({
    write(chunk, _encoding, done) {
      text += String(chunk);
      done();
    },
  });
  return { out, text: () => text };
}

const image = (id: string, name: string): ImageRecord => ({
  id,
  name,
  upload_status: "ready",
  upload_error: null,
  size: 2048,
  format: "png",
  format_name: "PNG",
  width: 64,
  height: 48,
  channels: 1,
  bit_depth: 8,
  planes: 1,
  pixel_size: null,
  pixel_size_warning: null,
  channel_names: null,
  levels: [{ width: 64, height: 48 }],
  level_read: 0,
  sha256: null,
  objective_magnification: null,
  created_at: "2026-11-26T10:00:00.000Z",
});

const segmentation = (id: string, imageId: string, cells: number, patch: Partial<SegmentationRecord> = {}): SegmentationRecord => ({
  id,
  image_id: imageId,
  image_name: `${imageId}.png`,
  source: "model",
  model_id: "cpsam",
  model_name: "cpsam",
  model_version: "1",
  cell_count: cells,
  confluency: 0.2361,
  diameter: 17.04,
  modality: { modality: "fluorescence", source: "detected" },
  diameter_basis: { source: "estimated", reason: "estimated at 24.0 px (the image states no pixel size)" },
  width: 64,
  height: 48,
  pixel_size: null,
  timings: null,
  measurements: { status: "measured", detail: null },
  created_at: "2026-11-26T10:00:00.000Z",
  ...patch,
});

/** A service answering GET paths from `answers`, a page at a time as listings are. */
function fakeService(answers: Record<string, unknown>): Http {
  const fetch = (async (url: string | URL) => {
    const path = new URL(String(url)).pathname.replace("/api/v1", "");
    if (!(path in answers)) return new Response(JSON.stringify({ detail: `no ${path}` }), { status: 404 });
    const answer = answers[path];
    return Response.json(Array.isArray(answer) ? { items: answer, next_cursor: null } : answer);
  }) as typeof globalThis.fetch;
  return new Http({ api: "http://service.test/api/v1", key: "k", fetch, retry: { attempts: 1, baseMs: 1, maxMs: 1 } });
}

describe("npm run client -- images", () => {
  it("shows each image's cell count, its most recent segmentation's, and how many segmentations it has", async () => {
    const http = fakeService({
      "/images": [image("img_a", "a.png"), image("img_b", "b.png")],
      // Newest first: img_a's correction (98 cells) after its prediction (101).
      "/segmentations": [segmentation("seg_3", "img_a", 98, { source: "import" }), segmentation("seg_1", "img_a", 101)],
    });
    const { out, text } = collect();
    expect(await imagesCommand([], out, http)).toBe(0);
    const lines = text().split("\n");
    expect(lines[0]).toMatch(/^id\s+name\s+status\s+bytes\s+pixels\s+pixel size\s+cells\s+segmentations\s+created/);
    expect(lines.find((l) => l.startsWith("img_a"))).toMatch(/none in the file\s+98\s+2\s+2026-11-26/);
    expect(lines.find((l) => l.startsWith("img_b"))).toMatch(/none in the file\s+0\s+2026-11-26/);
  });
});

describe("npm run client -- segmentation <id>", () => {
  it("shows its image, origin, cells and whether its intensities are measured", async () => {
    const http = fakeService({
      "/segmentation/seg_9": segmentation("seg_9", "img_a", 98, {
        source: "import",
        model_id: null,
        model_name: null,
        measurements: { status: "measuring", detail: null },
      }),
      "/segmentation/seg_8": segmentation("seg_8", "img_a", 97, { measurements: { status: "failed", detail: "the image could not be read" } }),
    });
    let shown = collect();
    expect(await segmentationCommand(["seg_9"], shown.out, http)).toBe(0);
    expect(shown.text()).toContain("segmentation  seg_9");
    expect(shown.text()).toContain("image         img_a.png (img_a), 64x48");
    expect(shown.text()).toContain("made by       imported");
    expect(shown.text()).toContain("cells         98, confluency 23.6%");
    expect(shown.text()).toContain("measurements  measuring: a runner is measuring its cells' intensities in the image");
    shown = collect();
    await segmentationCommand(["seg_8"], shown.out, http);
    expect(shown.text()).toContain("made by       cpsam 1");
    expect(shown.text()).toContain("measurements  failed: the image could not be read");
    shown = collect();
    await segmentationCommand(["seg_8", "--json"], shown.out, http);
    expect(JSON.parse(shown.text())).toMatchObject({ id: "seg_8", cell_count: 97 });
    await expect(segmentationCommand(["seg_404"], collect().out, http)).rejects.toThrow(/404/);
  });

  it("shows a whole slide's blocks and how many were glass", async () => {
    const http = fakeService({
      "/segmentation/seg_7": segmentation("seg_7", "img_a", 5120, { timings: { blocks: 12, glass_blocks: 3, merge: 2100 } }),
      "/segmentation/seg_6": segmentation("seg_6", "img_a", 4000, { timings: { blocks: 6, glass_blocks: 0 } }),
      "/segmentation/seg_5": segmentation("seg_5", "img_a", 98, { timings: { network: 900 } }),
    });
    let shown = collect();
    await segmentationCommand(["seg_7"], shown.out, http);
    expect(shown.text()).toContain("blocks        12, 3 of them glass (no signal: the network skipped them)");
    shown = collect();
    await segmentationCommand(["seg_6"], shown.out, http);
    expect(shown.text()).toContain("blocks        6, none of them glass\n");
    shown = collect();
    await segmentationCommand(["seg_5"], shown.out, http);
    expect(shown.text()).not.toContain("blocks");
  });
});
