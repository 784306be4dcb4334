// The viewer's full-resolution level of a slide predicted block-wise: a tile pack per block core and
// a manifest naming the cores (schema/preview-tiles.ts), answered with the preview's index and a
// tile at a time, only to the organization that owns the image, and removed with the image.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { writePreviewArchive } from "../../schema/preview-tiles.ts";
import { imageFullManifestKey, imageFullPrefix, imageFullTilesKey, imagePreviewKey } from "../../schema/storage-keys.ts";
import { call, createOrg, json, pngBytes, type TestOrg, uploadImage } from "./helpers.ts";
import { dashboardCall, signIn } from "./dashboard-helpers.ts";

/** The 8 x 6 test image cut into two cores of 4 x 6 (a grid of core side 4). */
const CORES = [
  { x: 0, y: 0, width: 4, height: 6 },
  { x: 4, y: 0, width: 4, height: 6 },
];
const TILES = [pngBytes(4, 6), pngBytes(4, 5)];
const pack = (png: Uint8Array) =>
  writePreviewArchive({ width: 4, height: 6, tile: 512, levels: [{ factor: 1, width: 4, height: 6, columns: 1, rows: 1 }] }, [[png]]);
const PREVIEW = writePreviewArchive({ width: 8, height: 6, tile: 512, levels: [{ factor: 1, width: 8, height: 6, columns: 1, rows: 1 }] }, [[pngBytes(8, 6)]]);

/** An image with a preview, and with the full-resolution level a fanned-out prediction writes when `full`. */
async function imageWithPreview(org: TestOrg, full: boolean): Promise<string> {
  const { id } = await uploadImage(org);
  await env.BUCKET.put(imagePreviewKey(org.id, id), PREVIEW);
  if (full) {
    for (const [block, png] of TILES.entries()) await env.BUCKET.put(imageFullTilesKey(org.id, id, 4, block), pack(png));
    await env.BUCKET.put(imageFullManifestKey(org.id, id), JSON.stringify({ width: 8, height: 6, tile: 512, core_side: 4, blocks: CORES }));
  }
  return id;
}

describe("an image's full-resolution level", () => {
  it("is announced with the preview's index and served a tile at a time from its blocks' packs", async () => {
    const org = await createOrg();
    const id = await imageWithPreview(org, true);
    const session = await signIn(org);
    const state = await json(await dashboardCall(session, `/api/images/${id}/preview`));
    expect(state).toMatchObject({ status: "ready", index: { width: 8, height: 6 }, full: { tile: 512, blocks: CORES } });
    for (const [block, png] of TILES.entries()) {
      const tile = await dashboardCall(session, `/api/images/${id}/full/${block}/0/0`);
      expect(tile.status).toBe(200);
      expect(tile.headers.get("Content-Type")).toBe("image/png");
      expect(new Uint8Array(await tile.arrayBuffer())).toEqual(png);
    }
    // No such block, no such tile of a block.
    for (const path of ["2/0/0", "0/1/0", "1/0/1"]) {
      const missing = await dashboardCall(session, `/api/images/${id}/full/${path}`);
      expect(missing.status).toBe(404);
      expect(await json(missing)).toEqual({ detail: `Image ${id} has no full-resolution tile ${path}` });
    }
    expect((await dashboardCall(session, `/api/images/${id}/full/-1/0/0`)).status).toBe(422);
  });

  it("is absent from an image that has none, whose tiles are 404", async () => {
    const org = await createOrg();
    const id = await imageWithPreview(org, false);
    const session = await signIn(org);
    const state = await json(await dashboardCall(session, `/api/images/${id}/preview`));
    expect(state.status).toBe("ready");
    expect(state).not.toHaveProperty("full");
    expect((await dashboardCall(session, `/api/images/${id}/full/0/0/0`)).status).toBe(404);
    // A pack without its manifest (a prediction whose merge never came) is not served either.
    await env.BUCKET.put(imageFullTilesKey(org.id, id, 4, 0), pack(TILES[0]!));
    expect((await dashboardCall(session, `/api/images/${id}/full/0/0/0`)).status).toBe(404);
  });

  it("is another organization's business: its image is not found", async () => {
    const owner = await createOrg();
    const id = await imageWithPreview(owner, true);
    const stranger = await signIn(await createOrg());
    const tile = await dashboardCall(stranger, `/api/images/${id}/full/0/0/0`);
    expect(tile.status).toBe(404);
    expect(await json(tile)).toEqual({ detail: `Image with id ${id} not found` });
    expect((await dashboardCall(stranger, `/api/images/${id}/preview`)).status).toBe(404);
  });

  it("goes with its image", async () => {
    const org = await createOrg();
    const id = await imageWithPreview(org, true);
    expect((await env.BUCKET.list({ prefix: imageFullPrefix(org.id, id) })).objects).toHaveLength(3);
    expect((await call(`/image/${id}`, { method: "DELETE", key: org.key })).status).toBe(204);
    expect((await env.BUCKET.list({ prefix: imageFullPrefix(org.id, id) })).objects).toEqual([]);
  });
});
