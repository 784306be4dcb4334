import { unzipSync } from "fflate";
import { describe, expect, it } from "vitest";
import { exportErrorStatus } from "../../../worker/exports/index.ts";
import { imageJRoiName } from "../../../worker/exports/rois-zip.ts";
import { decodeImageJRoi } from "../../../worker/annotations/imagej-roi-decoder.ts";
import { pixelsInside, sameRing } from "./helpers/polygons.ts";
import { exportFrom, exportSmall } from "./helpers/run-export.ts";
import { smallContext, smallDescription, smallRois } from "./helpers/small-segmentation.ts";
import { readAllBytes } from "./helpers/streams.ts";

async function entries(): Promise<[string, Uint8Array][]> {
  const file = await exportSmall("rois.zip");
  expect(file.contentType).toBe("application/zip");
  return Object.entries(unzipSync(await readAllBytes(file.body)));
}

describe("rois.zip", () => {
  it("holds one .roi per ROI, uniquely named and ordered by roi_index", async () => {
    const names = (await entries()).map(([name]) => name);
    expect(names).toEqual(smallRois.map((_, i) => `0000${i + 1}-${smallContext.segmentationId}-${i + 1}.roi`));
    expect([...names].sort()).toEqual(names);
  });

  it("decodes (by ImageJ's format) to traced polygons with the artifact's outline, bounds and name", async () => {
    const all = await entries();
    expect(all).toHaveLength(smallRois.length);
    all.forEach(([name, bytes], i) => {
      const roi = smallRois[i]!;
      const decoded = decodeImageJRoi(bytes);
      expect(decoded.type).toBe(8); // traced
      expect(decoded.version).toBeGreaterThanOrEqual(218);
      expect([decoded.left, decoded.top, decoded.right - decoded.left, decoded.bottom - decoded.top]).toEqual([roi.bbox_x, roi.bbox_y, roi.bbox_w, roi.bbox_h]);
      expect(sameRing(decoded.polygon, roi.polygon)).toBe(true);
      expect(decoded.name).toBe(name.replace(/\.roi$/, ""));
    });
  });

  it("measures area_px as ImageJ counts a traced ROI: the pixels whose centres are inside", async () => {
    (await entries()).forEach(([, bytes], i) => {
      expect(pixelsInside(decodeImageJRoi(bytes).polygon)).toBe(smallRois[i]?.area_px);
    });
  });

  it("pads indices to the ROI count's digits, so names keep sorting past 99,999", () => {
    expect(imageJRoiName(smallContext, 0, 123_456)).toBe(`000001-${smallContext.segmentationId}-1`);
    expect(imageJRoiName(smallContext, 123_455, 123_456)).toBe(`123456-${smallContext.segmentationId}-123456`);
  });

  it("makes the segmentation id file-name safe", async () => {
    const context = { ...smallContext, segmentationId: "a/b c" };
    const file = await exportFrom("rois.zip", smallDescription, smallRois, context);
    const names = Object.keys(unzipSync(await readAllBytes(file.body)));
    expect(names[0]).toBe("00001-a_b_c-1.roi");
  });

  it("refuses images larger than ImageJ's 16-bit coordinates with a 422-class error", async () => {
    const huge = { ...smallDescription, imageWidth: 70_000 };
    const attempt = exportFrom("rois.zip", huge, smallRois, smallContext);
    await expect(attempt).rejects.toThrow(/beyond ImageJ .roi coordinates/);
    expect(exportErrorStatus(await attempt.catch((e: unknown) => e))).toBe(422);
  });
});
