// The files a `segment` run takes from a folder: the image files the service reads, by extension
// (an Aperio .svs is a TIFF), nothing hidden, nothing else.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { collectInputs } from "../../client/inputs.ts";

const folder = mkdtempSync(join(tmpdir(), "cellseg-inputs-"));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe("the client's folder walk", () => {
  it("takes TIFF (.tif, .tiff, slides' .svs, .scn and .bif), DICOM (.dcm), zipped OME-Zarr (.zip), PNG and JPEG files, whatever their case, and leaves the rest", () => {
    for (const name of [
      "slide.svs",
      "frame.TIF",
      "b.tiff",
      "c.png",
      "d.jpeg",
      "e.JPG",
      "level-0.DCM",
      "leica.scn",
      "ventana.bif",
      "plate.zarr.zip",
      "notes.txt",
      ".hidden.png",
      "slide.ndpi",
    ])
      writeFileSync(join(folder, name), "x");
    expect(collectInputs([folder], join(folder, "out")).map((input) => input.name)).toEqual([
      "b.tiff",
      "c.png",
      "d.jpeg",
      "e.JPG",
      "frame.TIF",
      "leica.scn",
      "level-0.DCM",
      "plate.zarr.zip",
      "slide.ndpi",
      "slide.svs",
      "ventana.bif",
    ]);
  });
});
