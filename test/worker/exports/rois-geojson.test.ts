import { describe, expect, it } from "vitest";
import { formatMeasurement } from "../../../schema/measurements.ts";
import { DEFAULT_MEASUREMENT_COLUMNS, MEASUREMENT_COLUMN_NAMES } from "../../../common/measurement-columns.ts";
import { RoiShape } from "../../../common/geometry/roi-shape.ts";
import { containsPoint, doubledSignedArea, sameRing } from "./helpers/polygons.ts";
import { exportSmall } from "./helpers/run-export.ts";
import { smallContext, smallRois } from "./helpers/small-segmentation.ts";
import { readAllText } from "./helpers/streams.ts";

interface Feature {
  type: string;
  id: string;
  geometry: { type: string; coordinates: number[][][] };
  properties: Record<string, unknown>;
}

async function featureCollection(columns?: string[]): Promise<{ type: string; features: Feature[] }> {
  const file = await exportSmall("rois.geojson", { columns });
  expect(file.contentType).toBe("application/geo+json");
  return JSON.parse(await readAllText(file.body));
}

describe("rois.geojson", () => {
  it("is a FeatureCollection with one Polygon feature per ROI, in ROI order", async () => {
    const fc = await featureCollection();
    expect(fc.type).toBe("FeatureCollection");
    expect(fc.features).toHaveLength(smallRois.length);
    fc.features.forEach((f, i) => {
      expect(f.type).toBe("Feature");
      expect(f.geometry.type).toBe("Polygon");
      expect(f.geometry.coordinates).toHaveLength(1); // exterior ring only
      expect(f.id).toBe(`${smallContext.segmentationId}-${i + 1}`);
    });
  });

  it("closes every ring and orients it counter-clockwise by RFC 7946's rule (positive shoelace sum)", async () => {
    for (const f of (await featureCollection()).features) {
      const ring = f.geometry.coordinates[0] ?? []; // a missing ring fails the length check
      expect(ring.length).toBeGreaterThanOrEqual(4);
      expect(ring[ring.length - 1]).toEqual(ring[0]);
      const open = ring.slice(0, -1).flat();
      expect(doubledSignedArea(open)).toBeGreaterThan(0);
    }
  });

  it("traces the artifact's pixel-edge outline in pixel coordinates, enclosing area_px pixels", async () => {
    const features = (await featureCollection()).features;
    expect(features).toHaveLength(smallRois.length);
    features.forEach((f, i) => {
      const roi = smallRois[i]!;
      const open = (f.geometry.coordinates[0] ?? []).slice(0, -1).flat(); // a missing ring is no ROI's outline
      expect(sameRing(open, roi.polygon)).toBe(true);
      expect(doubledSignedArea(open) / 2).toBe(roi.area_px);
      // The centroid of a compact cell shape lies inside its outline.
      expect(containsPoint(open, roi.centroid_x, roi.centroid_y)).toBe(true);
    });
  });

  it("carries the measurement fields and QuPath's objectType; classification only once a cell type exists", async () => {
    const features = (await featureCollection()).features;
    expect(features).toHaveLength(smallRois.length);
    features.forEach((f, i) => {
      const roi = smallRois[i]!;
      expect(Object.keys(f.properties)).toEqual([...DEFAULT_MEASUREMENT_COLUMNS.map((c) => c.name), "objectType"]);
      expect(f.properties.objectType).toBe("detection");
      expect(f.properties).not.toHaveProperty("classification");
      expect(f.properties).toMatchObject({
        image_name: smallContext.imageName,
        image_width: 40,
        roi_index: i + 1,
        cell_type: "",
        entity_type: "cell",
        area_px: roi.area_px,
        perimeter_px: roi.perimeter_px,
        centroid_x: Number(formatMeasurement(roi.centroid_x)),
        centroid_y: Number(formatMeasurement(roi.centroid_y)),
        bbox_x: roi.bbox_x,
        bbox_y: roi.bbox_y,
        bbox_w: roi.bbox_w,
        bbox_h: roi.bbox_h,
      });
    });
  });

  it("carries the columns `columns` chooses, as measurements.csv does: names and groups", async () => {
    const features = (await featureCollection(["roi_index", "shape"])).features;
    expect(features).toHaveLength(smallRois.length);
    features.forEach((f, i) => {
      const shape = new RoiShape(smallRois[i]!);
      expect(Object.keys(f.properties)).toEqual([
        "roi_index",
        "circularity",
        "solidity",
        "eccentricity",
        "major_axis_px",
        "minor_axis_px",
        "orientation_deg",
        "feret_max_px",
        "equivalent_diameter_px",
        "objectType",
      ]);
      expect(f.properties.roi_index).toBe(i + 1);
      expect(f.properties.feret_max_px).toBe(Number(formatMeasurement(shape.feretMax())));
      expect(f.properties.major_axis_px).toBe(Number(formatMeasurement(shape.ellipse().majorAxis)));
    });
    const all = (await featureCollection(["all"])).features;
    expect(all).toHaveLength(smallRois.length);
    expect(Object.keys(all[0]!.properties)).toEqual([...MEASUREMENT_COLUMN_NAMES, "objectType"]);
  });

  it("refuses an unknown column before reading the artifact, as measurements.csv does", async () => {
    await expect(exportSmall("rois.geojson", { columns: ["roi_index", "volume"] })).rejects.toThrow(/unknown column\(s\): volume/);
  });
});
