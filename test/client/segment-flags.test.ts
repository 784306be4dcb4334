// The segment command's flags as the parameters and columns they ask the service for.
import { describe, expect, it } from "vitest";
import { measurementColumns, predictionParams } from "../../client/commands/segment.ts";
import { UsageError } from "../../client/connection.ts";

describe("npm run client -- segment's measurement flags", () => {
  it("--cell-expansion takes micrometres or pixels, --pixel-size micrometres", () => {
    expect(predictionParams({ "cell-expansion": "5um" })).toEqual({ cell_expansion_um: 5 });
    expect(predictionParams({ "cell-expansion": "2.5 µm", "pixel-size": "0.325" })).toEqual({ cell_expansion_um: 2.5, pixel_size_um: 0.325 });
    expect(predictionParams({ "cell-expansion": "8px", diameter: "auto" })).toEqual({ cell_expansion_px: 8, diameter: "auto" });
    for (const wrong of ["5", "5 inches", "-3px", "0px", "px"]) expect(() => predictionParams({ "cell-expansion": wrong }), wrong).toThrow(UsageError);
    expect(() => predictionParams({ "pixel-size": "0" })).toThrow(/--pixel-size must be a positive number/);
  });

  it("--columns takes column and group names, and any intensity or cytoplasm column (named by each image's channels)", () => {
    expect(measurementColumns("default, shape,cell,intensity_DAPI_mean,cytoplasm_c0_sum")).toEqual([
      "default",
      "shape",
      "cell",
      "intensity_DAPI_mean",
      "cytoplasm_c0_sum",
    ]);
    expect(measurementColumns(undefined)).toEqual([]);
    expect(() => measurementColumns("area_px,volume")).toThrow(/not volume\. Groups: default, shape, calibrated, cell, intensity, all/);
  });
});
