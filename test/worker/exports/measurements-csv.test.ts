import { describe, expect, it } from "vitest";
import { csvField } from "../../../schema/csv-field.ts";
import { channelColumnNames, formatMeasurement, MEASUREMENT_GROUP_NAMES } from "../../../schema/measurements.ts";
import {
  DEFAULT_MEASUREMENT_COLUMNS,
  MEASUREMENT_COLUMN_NAMES,
  MEASUREMENT_COLUMNS,
  UnknownMeasurementColumnsError,
} from "../../../common/measurement-columns.ts";
import { RoiShape } from "../../../common/geometry/roi-shape.ts";
import type { ExportContext } from "../../../schema/measurements.ts";
import { exportErrorStatus } from "../../../worker/exports/index.ts";
import { parseCsv } from "./helpers/csv-parse.ts";
import { INTENSITY_STATS } from "../../../schema/roi.ts";
import { exportFrom, exportSmall } from "./helpers/run-export.ts";
import { smallContext, smallDescription, smallRois } from "./helpers/small-segmentation.ts";
import { readAllText } from "./helpers/streams.ts";

const SPEC_COLUMNS = [
  "image_name",
  "image_width",
  "image_height",
  "segmentation_id",
  "segmentation_source",
  "model_name",
  "confluency",
  "roi_index",
  "roi_id",
  "cell_type",
  "tags",
  "entity_type",
  "area_px",
  "perimeter_px",
  "centroid_x",
  "centroid_y",
  "bbox_x",
  "bbox_y",
  "bbox_w",
  "bbox_h",
];

async function csvRecords(context: ExportContext = smallContext, columns?: string[]): Promise<string[][]> {
  const file = await exportSmall("measurements.csv", { columns }, context);
  return parseCsv(await readAllText(file.body));
}

/** A number as the exports write it (formatMeasurement), parsed back. */
const exported = (value: number) => Number(formatMeasurement(value));

describe("measurements.csv", () => {
  it("has, without `columns`, exactly the 20 columns of the spec, in its order", async () => {
    expect(DEFAULT_MEASUREMENT_COLUMNS.map((c) => c.name)).toEqual(SPEC_COLUMNS);
    expect(MEASUREMENT_COLUMN_NAMES.slice(0, 20)).toEqual(SPEC_COLUMNS);
    const [header] = await csvRecords();
    expect(header).toEqual(SPEC_COLUMNS);
  });

  it("has one row per ROI whose values parse back to the artifact's and the segmentation's", async () => {
    const [header, ...rows] = await csvRecords();
    expect(rows).toHaveLength(smallRois.length);
    rows.forEach((row, i) => {
      // There are rows, so there is a header; and one row per ROI.
      const record = Object.fromEntries(header!.map((name, k) => [name, row[k]]));
      const roi = smallRois[i]!;
      expect(record).toEqual({
        image_name: smallContext.imageName,
        image_width: "40",
        image_height: "30",
        segmentation_id: smallContext.segmentationId,
        segmentation_source: "model",
        model_name: "nuclei-cpsam",
        confluency: formatMeasurement(smallContext.confluency!),
        roi_index: String(i + 1),
        roi_id: `${smallContext.segmentationId}-${i + 1}`,
        cell_type: "",
        tags: "",
        entity_type: "cell",
        area_px: String(roi.area_px),
        perimeter_px: String(roi.perimeter_px),
        centroid_x: formatMeasurement(roi.centroid_x),
        centroid_y: formatMeasurement(roi.centroid_y),
        bbox_x: String(roi.bbox_x),
        bbox_y: String(roi.bbox_y),
        bbox_w: String(roi.bbox_w),
        bbox_h: String(roi.bbox_h),
      });
      // Rounded to 6 significant digits, never fewer than 4 decimals: no float noise.
      expect(Number(record.centroid_x)).toBeCloseTo(roi.centroid_x, 4);
    });
  });

  it("writes numbers rounded to what a measurement holds: 6 significant digits, never fewer than 4 decimals, whole numbers exactly", () => {
    expect(formatMeasurement(14.365000000000002)).toBe("14.365");
    expect(formatMeasurement(0.1 + 0.2)).toBe("0.3");
    expect(formatMeasurement(1.23456789)).toBe("1.23457");
    expect(formatMeasurement(0.000123456789)).toBe("0.000123457");
    expect(formatMeasurement(12345.678912)).toBe("12345.6789");
    expect(formatMeasurement(123456789)).toBe("123456789");
    expect(formatMeasurement(-1.5)).toBe("-1.5");
    expect(formatMeasurement(Number.NaN)).toBeNull();
    expect(csvField(14.365000000000002)).toBe("14.365");
    expect(csvField(Number.POSITIVE_INFINITY)).toBe("");
  });

  it("ends every record with CRLF and starts without a byte-order mark", async () => {
    const text = await readAllText((await exportSmall("measurements.csv")).body);
    expect(text.charCodeAt(0)).not.toBe(0xfeff);
    expect(text.endsWith("\r\n")).toBe(true);
    expect(text.split("\r\n")).toHaveLength(smallRois.length + 2);
  });

  describe("quoting (RFC 4180)", () => {
    const awkward = [
      "plain.tif",
      "comma, here.tif",
      'quote " inside.tif',
      '"fully quoted".tif',
      "line\nbreak.tif",
      "carriage\r\nreturn.tif",
      "  spaces around  ",
      "Zellkern Ø 12 µm — 細胞 🔬.tif",
      "",
    ];
    for (const imageName of awkward) {
      it(`keeps ${JSON.stringify(imageName)} intact`, async () => {
        const records = await csvRecords({ ...smallContext, imageName, modelName: `model, "${imageName}"` }, ["image_name", "model_name", "roi_index"]);
        expect(records.slice(1).map((r) => r[0])).toEqual(smallRois.map(() => imageName));
        expect(records[1]?.[1]).toBe(`model, "${imageName}"`);
        expect(records[1]).toHaveLength(3);
      });
    }

    it("writes an unknown model (an import) as an empty field", async () => {
      const records = await csvRecords({ ...smallContext, segmentationSource: "import", modelName: null }, ["segmentation_source", "model_name"]);
      expect(records[1]).toEqual(["import", ""]);
    });
  });

  describe("formula injection (a spreadsheet runs a cell starting with = + - @ tab or CR)", () => {
    const formulas = ["=1+2", "+SUM(A1:A9)", "-2+3", "@cmd", "\tstarts with tab", "\rstarts with CR", '=HYPERLINK("http://x","y")'];
    for (const imageName of formulas) {
      it(`writes the name ${JSON.stringify(imageName)} behind a leading apostrophe`, async () => {
        const records = await csvRecords({ ...smallContext, imageName, modelName: imageName }, ["image_name", "model_name"]);
        expect(records[1]).toEqual([`'${imageName}`, `'${imageName}`]);
      });
    }

    it("leaves a name with such a character later on as it is", async () => {
      const records = await csvRecords({ ...smallContext, imageName: "a=b+c-d@e.tif" }, ["image_name"]);
      expect(records[1]).toEqual(["a=b+c-d@e.tif"]);
    });

    it("treats a name that looks like a negative number as text, and a negative number as a number", async () => {
      const records = await csvRecords({ ...smallContext, imageName: "-1.5" }, ["image_name"]);
      expect(records[1]).toEqual(["'-1.5"]);
      expect(csvField(-1.5)).toBe("-1.5");
      expect(csvField(-0.25)).toBe("-0.25");
    });
  });

  describe("the columns option", () => {
    it("selects and orders columns", async () => {
      const records = await csvRecords(smallContext, ["roi_id", "area_px", "image_name"]);
      expect(records[0]).toEqual(["roi_id", "area_px", "image_name"]);
      expect(records[3]).toEqual([`${smallContext.segmentationId}-3`, String(smallRois[2]!.area_px), smallContext.imageName]);
    });

    it("rejects names that are neither a column nor a group before reading any cell, naming them and listing the valid ones", async () => {
      const attempt = exportSmall("measurements.csv", { columns: ["area_px", "volume", "shape", "colour"] });
      await expect(attempt).rejects.toThrow(UnknownMeasurementColumnsError);
      const error = (await attempt.catch((e: unknown) => e)) as UnknownMeasurementColumnsError;
      expect(error.unknown).toEqual(["volume", "colour"]);
      expect(error.valid).toEqual(MEASUREMENT_COLUMN_NAMES);
      expect(error.message).toContain("unknown column(s): volume, colour");
      expect(error.message).toContain(SPEC_COLUMNS.join(", "));
      expect(error.message).toContain("or a group of them: default, shape, calibrated, all");
      expect(exportErrorStatus(error)).toBe(400);
    });

    it("takes a group's name for its columns: shape", async () => {
      const [header, ...rows] = await csvRecords(smallContext, ["roi_id", "shape"]);
      expect(header).toEqual([
        "roi_id",
        "circularity",
        "solidity",
        "eccentricity",
        "major_axis_px",
        "minor_axis_px",
        "orientation_deg",
        "feret_max_px",
        "equivalent_diameter_px",
      ]);
      expect(rows).toHaveLength(smallRois.length);
      rows.forEach((row, i) => {
        const roi = smallRois[i]!;
        const shape = new RoiShape(roi);
        const ellipse = shape.ellipse();
        expect(row.slice(1).map(Number)).toEqual(
          [
            Math.min(1, (4 * Math.PI * roi.area_px) / roi.perimeter_px ** 2),
            roi.area_px / shape.hullArea(),
            ellipse.eccentricity,
            ellipse.majorAxis,
            ellipse.minorAxis,
            ellipse.orientationDeg,
            shape.feretMax(),
            Math.sqrt((4 * roi.area_px) / Math.PI),
          ].map(exported),
        );
        // Written rounded to what the measurement holds: 6 significant digits.
        expect(row[2]).toBe(formatMeasurement(roi.area_px / shape.hullArea()));
      });
    });

    it("puts a column asked for twice, by name or through a group, once where it was first asked for", async () => {
      const [header] = await csvRecords(smallContext, ["solidity", "default", "shape", "roi_id"]);
      const restOfShape = ["circularity", "eccentricity", "major_axis_px", "minor_axis_px", "orientation_deg", "feret_max_px", "equivalent_diameter_px"];
      expect(header).toEqual(["solidity", ...SPEC_COLUMNS, ...restOfShape]);
    });

    it("gives every column for `all`, in the column list's order: the calibrated ones empty while the pixel size is unknown", async () => {
      const [header, ...rows] = await csvRecords(smallContext, ["all"]);
      expect(header).toEqual(MEASUREMENT_COLUMN_NAMES);
      expect(rows).toHaveLength(smallRois.length);
      const calibrated = new Set<string>(MEASUREMENT_COLUMNS.filter((c) => c.group === "calibrated").map((c) => c.name));
      expect(calibrated.size).toBe(10);
      for (const row of rows)
        header!.forEach((name, i) => {
          if (i < 20) return;
          if (calibrated.has(name)) expect(row[i], name).toBe("");
          else expect(Number.isFinite(Number(row[i])) && row[i] !== "", name).toBe(true);
        });
    });

    it("fills the calibrated columns once the pixel size is known: lengths in µm, areas in µm²", async () => {
      const context = { ...smallContext, pixelSize: { x: 0.25, y: 0.25 } };
      const [header, ...rows] = await csvRecords(context, ["calibrated", "area_px", "perimeter_px", "feret_max_px", "major_axis_px"]);
      expect(rows).toHaveLength(smallRois.length);
      rows.forEach((row, i) => {
        // There are rows, so there is a header; and one row per ROI.
        const r = Object.fromEntries(header!.map((name, k) => [name, Number(row[k])]));
        const roi = smallRois[i]!;
        expect([r.pixel_size_x_um, r.pixel_size_y_um]).toEqual([0.25, 0.25]);
        expect(r.area_um2).toBe(exported(roi.area_px * 0.0625));
        // The columns below were asked for (or are in the calibrated group), so r has them.
        expect(r.perimeter_um).toBe(exported(r.perimeter_px! * 0.25));
        expect(r.centroid_x_um).toBe(exported(roi.centroid_x * 0.25));
        expect(r.centroid_y_um).toBe(exported(roi.centroid_y * 0.25));
        expect(r.feret_max_um).toBeCloseTo(r.feret_max_px! * 0.25, 4);
        expect(r.major_axis_um).toBeCloseTo(r.major_axis_px! * 0.25, 4);
        expect(r.equivalent_diameter_um).toBeCloseTo(Math.sqrt((4 * r.area_um2!) / Math.PI), 4);
      });
    });
  });

  describe("the intensity group", () => {
    const channelNames = ["DAPI", "Alexa 488 (GFP)"];
    // Cell k's channel c statistic s: a number that says which it is.
    const rois = smallRois.map((r) => ({ ...r, intensity: Float64Array.from({ length: 12 }, (_, i) => (r.index + 1) * 100 + i + 0.25) }));
    const measured = () => exportFrom("measurements.csv", { ...smallDescription, channelNames }, rois, smallContext, { columns: ["roi_index", "intensity"] });

    it("names each channel's six statistics intensity_<channel>_<statistic>, in the artifact's channel order", async () => {
      const [header, ...rows] = parseCsv(await readAllText((await measured()).body));
      const names = ["DAPI", "Alexa_488_GFP"].flatMap((channel) => INTENSITY_STATS.map((stat) => `intensity_${channel}_${stat}`));
      expect(header).toEqual(["roi_index", ...names]);
      expect(header).toContain("intensity_Alexa_488_GFP_median");
      rows.forEach((row, k) => {
        expect(row.slice(1).map(Number)).toEqual(Array.from({ length: 12 }, (_, i) => (k + 1) * 100 + i + 0.25));
      });
    });

    it("is part of `all`, after the other columns, and each column can be asked for by name", async () => {
      const all = await exportFrom("measurements.csv", { ...smallDescription, channelNames }, rois, smallContext, { columns: ["all"] });
      const [header] = parseCsv(await readAllText(all.body));
      expect(header?.slice(0, MEASUREMENT_COLUMN_NAMES.length)).toEqual(MEASUREMENT_COLUMN_NAMES);
      expect(header?.slice(MEASUREMENT_COLUMN_NAMES.length)).toHaveLength(12);
      const one = await exportFrom("measurements.csv", { ...smallDescription, channelNames }, rois, smallContext, { columns: ["intensity_DAPI_sum"] });
      expect(parseCsv(await readAllText(one.body)).map((r) => r[0])).toEqual([
        "intensity_DAPI_sum",
        "105.25",
        "205.25",
        "305.25",
        "405.25",
        "505.25",
        "605.25",
        "705.25",
      ]);
    });

    it("does not exist for a segmentation that measured no intensities: asking for it is a 400 naming the groups there are", async () => {
      const error = (await exportSmall("measurements.csv", { columns: ["intensity"] }).catch((e: unknown) => e)) as UnknownMeasurementColumnsError;
      expect(error).toBeInstanceOf(UnknownMeasurementColumnsError);
      expect(error.message).toMatch(/unknown column\(s\): intensity; .*or a group of them: default, shape, calibrated, all$/);
      expect(exportErrorStatus(error)).toBe(400);
    });

    it("makes column names of any channel names: letters and digits kept, the rest one _, unique, c<n> when nothing is left", () => {
      expect(channelColumnNames(["DAPI", "Alexa 488 (GFP)", "µ-Kanal 細胞", "", "  ", "DAPI", "DAPI", 'a,b"c'])).toEqual([
        "DAPI",
        "Alexa_488_GFP",
        "µ_Kanal_細胞",
        "c3",
        "c4",
        "DAPI_2",
        "DAPI_3",
        "a_b_c",
      ]);
    });
  });

  it("documents every column and group", () => {
    for (const column of MEASUREMENT_COLUMNS) expect(column.description.length).toBeGreaterThan(5);
    expect(MEASUREMENT_GROUP_NAMES).toEqual(["default", "shape", "calibrated", "cell", "intensity", "all"]);
    // A group's name is never a column's, so a name means one thing.
    for (const group of MEASUREMENT_GROUP_NAMES) expect(MEASUREMENT_COLUMN_NAMES).not.toContain(group);
  });
});
