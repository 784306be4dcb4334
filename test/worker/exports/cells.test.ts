// Exports of a segmentation whose nuclei were grown into cells (a prediction's cell expansion):
// the cell column group in measurements.csv and GeoJSON properties, and rois.geojson as QuPath's
// cell objects (the cell's outline as geometry, the nucleus's as nucleusGeometry).
import { describe, expect, it } from "vitest";
import { INTENSITY_STATS, type Roi } from "../../../schema/roi.ts";
import { formatMeasurement } from "../../../schema/measurements.ts";
import { exportErrorStatus, NoCellsError } from "../../../worker/exports/index.ts";
import { parseCsv } from "./helpers/csv-parse.ts";
import { doubledSignedArea, sameRing } from "./helpers/polygons.ts";
import { exportFrom, exportSmall } from "./helpers/run-export.ts";
import { smallContext, smallDescription, smallRois } from "./helpers/small-segmentation.ts";
import { readAllText } from "./helpers/streams.ts";

const channelNames = ["DAPI", "Cy5"];

/** Each nucleus's cell: its bounding box grown by a pixel (inside the 40 x 30 image), with cytoplasm statistics. */
const cellular: Roi[] = smallRois.map((r) => {
  const x0 = Math.max(0, r.bbox_x - 1),
    y0 = Math.max(0, r.bbox_y - 1),
    x1 = Math.min(40, r.bbox_x + r.bbox_w + 1),
    y1 = Math.min(30, r.bbox_y + r.bbox_h + 1);
  return {
    ...r,
    intensity: Float64Array.from({ length: 12 }, (_, i) => 100 * (r.index + 1) + i),
    cell: {
      polygon: new Int32Array([x0, y0, x1, y0, x1, y1, x0, y1]),
      area_px: (x1 - x0) * (y1 - y0),
      perimeter_px: 2 * (x1 - x0 + y1 - y0),
      centroid_x: (x0 + x1) / 2,
      centroid_y: (y0 + y1) / 2,
      bbox_x: x0,
      bbox_y: y0,
      bbox_w: x1 - x0,
      bbox_h: y1 - y0,
      cytoplasmIntensity: Float64Array.from({ length: 12 }, (_, i) => -(100 * (r.index + 1) + i)),
    },
  };
});
const description = { ...smallDescription, channelNames, cells: true };

describe("a segmentation with cells", () => {
  it("offers the cell group: the cell's measurements, the cytoplasm's area and intensities, the nucleus/cell ratio", async () => {
    const context = { ...smallContext, pixelSize: { x: 0.5, y: 0.5 } };
    const file = await exportFrom("measurements.csv", description, cellular, context, { columns: ["roi_index", "area_px", "cell"] });
    const [header, ...rows] = parseCsv(await readAllText(file.body));
    const cytoplasm = ["DAPI", "Cy5"].flatMap((c) => INTENSITY_STATS.map((s) => `cytoplasm_${c}_${s}`));
    expect(header).toEqual([
      "roi_index",
      "area_px",
      "cell_area_px",
      "cell_perimeter_px",
      "cell_centroid_x",
      "cell_centroid_y",
      "cytoplasm_area_px",
      "nucleus_cell_area_ratio",
      "cell_area_um2",
      ...cytoplasm,
    ]);
    rows.forEach((row, i) => {
      const roi = cellular[i]!;
      const r = Object.fromEntries(header!.map((name, k) => [name, Number(row[k])]));
      expect(r.cell_area_px).toBe(roi.cell!.area_px);
      expect(r.cell_centroid_x).toBe(Number(formatMeasurement(roi.cell!.centroid_x)));
      expect(r.cytoplasm_area_px).toBe(roi.cell!.area_px - roi.area_px);
      expect(r.nucleus_cell_area_ratio).toBe(Number(formatMeasurement(roi.area_px / roi.cell!.area_px)));
      expect(r.cell_area_um2).toBe(roi.cell!.area_px * 0.25);
      expect(r.cytoplasm_Cy5_median).toBe(-(100 * (i + 1) + 7));
    });
  });

  it("writes QuPath cell objects with objects=cell: the cell outline as geometry, the nucleus as nucleusGeometry", async () => {
    const file = await exportFrom("rois.geojson", description, cellular, smallContext, { columns: ["roi_index", "cell_area_px"], objects: "cell" });
    const fc = JSON.parse(await readAllText(file.body)) as {
      features: {
        id: string;
        geometry: { coordinates: number[][][] };
        nucleusGeometry: { type: string; coordinates: number[][][] };
        properties: Record<string, unknown>;
      }[];
    };
    expect(fc.features).toHaveLength(cellular.length);
    fc.features.forEach((f, i) => {
      const roi = cellular[i]!;
      expect(Object.keys(f)).toEqual(["type", "id", "geometry", "nucleusGeometry", "properties"]);
      expect(f.properties).toEqual({ roi_index: i + 1, cell_area_px: roi.cell!.area_px, objectType: "cell" });
      const cell = f.geometry.coordinates[0]!.slice(0, -1).flat();
      const nucleus = f.nucleusGeometry.coordinates[0]!.slice(0, -1).flat();
      expect(f.nucleusGeometry.type).toBe("Polygon");
      expect(sameRing(cell, roi.cell!.polygon)).toBe(true);
      expect(sameRing(nucleus, roi.polygon)).toBe(true);
      // Both rings counter-clockwise by RFC 7946's rule, as every ring of the export.
      expect(doubledSignedArea(cell)).toBeGreaterThan(0);
      expect(doubledSignedArea(nucleus)).toBeGreaterThan(0);
    });
    // Without objects=cell the same segmentation exports its nuclei as detections.
    const detections = JSON.parse(await readAllText((await exportFrom("rois.geojson", description, cellular, smallContext)).body));
    expect(detections.features[0]).not.toHaveProperty("nucleusGeometry");
    expect(detections.features[0].properties.objectType).toBe("detection");
  });

  it("has no cells to write for a segmentation made without a cell expansion: objects=cell is a 422, the cell group unknown", async () => {
    const refused = await exportSmall("rois.geojson", { objects: "cell" }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(NoCellsError);
    expect(exportErrorStatus(refused)).toBe(422);
    expect((refused as Error).message).toMatch(/has no cells: predict with params.cell_expansion_um or cell_expansion_px/);
    await expect(exportSmall("measurements.csv", { columns: ["cell"] })).rejects.toThrow(/unknown column\(s\): cell/);
  });
});
