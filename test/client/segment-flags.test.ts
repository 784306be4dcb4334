// The segment command's flags as the parameters and columns they ask the service for.
import { describe, expect, it } from "vitest";
import { inClientWords } from "../../client/api-words.ts";
import { measurementColumns, predictionParams, refuseBeforeUpload } from "../../client/commands/segment.ts";
import { UsageError } from "../../client/connection.ts";
import { ApiError } from "../../client/http.ts";
import type { InputFile } from "../../client/inputs.ts";

const input = (name: string): InputFile => ({ path: `/data/${name}`, name, size: 1, mtimeMs: 0, folder: name });

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

describe("npm run client -- segment's prediction flags: every parameter the API takes", () => {
  it("--modality, --cellprob-threshold, --flow-threshold, --min-size and --augment become the API's parameters", () => {
    expect(predictionParams({ modality: "histology", "cellprob-threshold": "-1.5", "flow-threshold": "0.8", "min-size": "20", augment: true })).toEqual({
      modality: "histology",
      cellprob_threshold: -1.5,
      flow_threshold: 0.8,
      min_size: 20,
      augment: true,
    });
    expect(predictionParams({ modality: "auto" })).toEqual({ modality: "auto" });
    expect(() => predictionParams({ modality: "phase" })).toThrow(/--modality takes auto, fluorescence, brightfield, histology, not "phase"/);
  });

  it("refuses a value out of the service's range here, before any upload, naming the flag", () => {
    expect(() => predictionParams({ "flow-threshold": "11" })).toThrow(/^--flow-threshold: /);
    expect(() => predictionParams({ "cellprob-threshold": "-30" })).toThrow(/^--cellprob-threshold: /);
    expect(() => predictionParams({ "min-size": "2.5" })).toThrow(/^--min-size: /);
    expect(() => predictionParams({ diameter: "5000" })).toThrow(/^--diameter: diameter is at most/);
    expect(() => predictionParams({ "pixel-size": "100" })).toThrow(/^--pixel-size: --pixel-size is 0.01 to 50 µm/);
    expect(() => predictionParams({ "cell-expansion": "900px" })).toThrow(/^--cell-expansion: /);
  });

  it("refuses a cell expansion in µm before uploading a PNG or JPEG without --pixel-size: those files carry none", () => {
    const params = predictionParams({ "cell-expansion": "5um" });
    expect(() => refuseBeforeUpload(params, [input("a.tif"), input("b.png")])).toThrow(
      "--cell-expansion 5um needs the pixel size, and PNG and JPEG files carry none (b.png): add --pixel-size UM, or give the distance in pixels (--cell-expansion 8px)",
    );
    // A TIFF may carry its pixel size: only the service can tell, after the upload.
    expect(() => refuseBeforeUpload(params, [input("a.tif")])).not.toThrow();
    expect(() => refuseBeforeUpload(predictionParams({ "cell-expansion": "5um", "pixel-size": "0.5" }), [input("b.png")])).not.toThrow();
    expect(() => refuseBeforeUpload(predictionParams({ "cell-expansion": "8px" }), [input("b.png")])).not.toThrow();
    // The reach at the given pixel size is checked here too.
    expect(() => refuseBeforeUpload(predictionParams({ "cell-expansion": "400um", "pixel-size": "0.05" }), [input("b.png")])).toThrow(
      /^--cell-expansion 400um at --pixel-size 0.05: /,
    );
  });

  it("words the service's refusals in the client's flags, not the API's field names", () => {
    const api =
      "body.params.cell_expansion_um: A cell expansion in µm needs the pixel size, and image img_1's file does not give it: add pixel_size_um, or give cell_expansion_px";
    const words =
      "--cell-expansion: A cell expansion in µm needs the pixel size, and image img_1's file does not give it: add --pixel-size, or give --cell-expansion in pixels (8px)";
    expect(inClientWords(api)).toBe(words);
    const error = new ApiError("POST /predict", 422, api);
    expect(error.detail).toBe(words);
    expect(error.message).toBe(`POST /predict: 422 ${words}`);
    expect(inClientWords("params.channels asks for channel 3; the image has 2 channels")).toBe("--channels asks for channel 3; the image has 2 channels");
    expect(inClientWords("body.params.flow_threshold: Too big; body.params.channels.1: Too small")).toBe("--flow-threshold: Too big; --channels: Too small");
  });
});
