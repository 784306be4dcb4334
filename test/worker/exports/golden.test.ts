// The exports of the small segmentation (helpers/small-segmentation.ts) must stay byte for byte
// what golden/ holds (decoded pixels for the PNG, whose zlib stream may differ between runtimes).
// After an intended change: node test/worker/exports/golden/regenerate.ts, review, commit.

import { decode } from "fast-png";
import { describe, expect, it } from "vitest";
import goldenCsv from "./golden/measurements.csv?raw";
import goldenGeoJson from "./golden/rois.geojson?raw";
import goldenZipBase64 from "./golden/rois.zip.base64?raw";
import goldenPngDataUrl from "./golden/masks.png?inline";
import { exportSmall } from "./helpers/run-export.ts";
import { readAllBytes, readAllText } from "./helpers/streams.ts";

function base64Bytes(text: string): Uint8Array {
  return Uint8Array.from(atob(text.trim()), (c) => c.charCodeAt(0));
}

describe("golden exports of the small segmentation", () => {
  it("measurements.csv", async () => {
    expect(await readAllText((await exportSmall("measurements.csv")).body)).toBe(goldenCsv);
  });

  it("rois.geojson", async () => {
    expect(await readAllText((await exportSmall("rois.geojson")).body)).toBe(goldenGeoJson);
  });

  it("rois.zip", async () => {
    expect(await readAllBytes((await exportSmall("rois.zip")).body)).toEqual(base64Bytes(goldenZipBase64));
  });

  it("masks.png", async () => {
    const golden = decode(base64Bytes(String(goldenPngDataUrl).replace(/^data:image\/png;base64,/, "")));
    const fresh = decode(await readAllBytes((await exportSmall("masks.png")).body));
    expect([fresh.width, fresh.height, fresh.depth]).toEqual([golden.width, golden.height, golden.depth]);
    expect(Array.from(fresh.data)).toEqual(Array.from(golden.data));
  });
});
