// What the client says of an image's pixel size (`images`, and `segment` after each upload): the
// size with where it came from, or why the file gave none, so no µm column is read without knowing.
import { describe, expect, it } from "vitest";
import { formatPixelSize } from "../../client/format.ts";

describe("the client's pixel size text", () => {
  it("names the source of a size, and the reason a file's resolution was set aside", () => {
    expect(formatPixelSize({ pixel_size: { x_um: 0.325, y_um: 0.325, source: "ome" }, pixel_size_warning: null })).toBe("0.325 µm (OME-XML)");
    expect(formatPixelSize({ pixel_size: { x_um: 0.65, y_um: 1.3, source: "tiff" }, pixel_size_warning: null })).toBe(
      "0.65 × 1.3 µm (the TIFF resolution tags)",
    );
    const warning = "The file's resolution, 96 dpi, is a screen or print default, not a microscope's calibration";
    expect(formatPixelSize({ pixel_size: null, pixel_size_warning: warning })).toBe(
      "none (the file's resolution, 96 dpi, is a screen or print default, not a microscope's calibration)",
    );
    expect(formatPixelSize({ pixel_size: null, pixel_size_warning: null })).toBe("none in the file");
  });
});
