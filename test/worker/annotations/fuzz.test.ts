// Annotation import fuzzing: valid files of every format, and the crafted ones of issues 24 and 35
// (a comb polygon, strips sharing their data, ZIP entries sharing one stream, repeated "features"
// members), mutated byte by byte. Every mutation is imported or refused with an
// AnnotationImportError (a documented 4xx), never anything else: the bounds on work hold for files
// no one wrote on purpose too.
import { encode as encodePng } from "fast-png";
import { describe, expect, it } from "vitest";
import { stripsSharingLzwData } from "../../fixtures/hostile-images.ts";
import { combGeoJson, combRoi, rectangleRoi, repeatedFeaturesMembers, zipOfOverlappingEntries } from "../../fixtures/hostile-annotations.ts";
import { encodeTiff } from "../../fixtures/tiff-writer.ts";
import { AnnotationImportError, importAnnotation, importErrorStatus } from "../../../worker/annotations/index.ts";
import { mutate } from "../../engine/helpers/mutate.ts";

const ITERATIONS = 400;
const [WIDTH, HEIGHT] = [64, 48];
const text = (s: string) => new TextEncoder().encode(s);

function seeds(): { name: string; bytes: Uint8Array }[] {
  const labels = new Uint16Array(WIDTH * HEIGHT);
  for (let y = 0; y < HEIGHT; y++) for (let x = 0; x < WIDTH; x++) labels[y * WIDTH + x] = ((x >> 4) + (y >> 4) * 4) % 7;
  const polygon = (x: number, y: number, s: number) => ({
    type: "Feature",
    properties: {},
    geometry: {
      type: "Polygon",
      coordinates: [
        [
          [x, y],
          [x + s, y],
          [x + s, y + s],
          [x, y + s],
          [x, y],
        ],
      ],
    },
  });
  return [
    { name: "GeoJSON", bytes: text(JSON.stringify({ type: "FeatureCollection", features: [polygon(2, 2, 10), polygon(20, 5, 8), polygon(40, 30, 6)] })) },
    { name: "ImageJ .roi", bytes: rectangleRoi(3, 4, 12, 9) },
    { name: "label PNG", bytes: encodePng({ width: WIDTH, height: HEIGHT, data: labels, depth: 16, channels: 1 }) },
    {
      name: "label TIFF",
      bytes: encodeTiff([{ width: WIDTH, height: HEIGHT, samplesPerPixel: 1, kind: "uint16", values: [...labels], compression: "lzw", rowsPerStrip: 8 }]),
    },
    { name: "comb GeoJSON", bytes: combGeoJson(400, WIDTH, HEIGHT) },
    { name: "comb .roi", bytes: combRoi(400, WIDTH, HEIGHT) },
    { name: "TIFF strips sharing LZW data", bytes: stripsSharingLzwData(WIDTH, 8, 64) },
    { name: "ZIP entries sharing one stream", bytes: zipOfOverlappingEntries(8, "cell.roi", rectangleRoi(1, 1, 5, 5), 0, 64) },
    { name: "repeated features members", bytes: repeatedFeaturesMembers(4, 2, WIDTH, HEIGHT) },
  ];
}

describe("annotation import fuzzing", () => {
  it(`imports or refuses with a documented status each of ${ITERATIONS} mutated files`, { timeout: 120_000 }, () => {
    const all = seeds();
    const failures: string[] = [];
    const outcomes = { imported: 0, refused: 0 };
    for (let i = 0; i < ITERATIONS; i++) {
      const seed = all[i % all.length]!;
      const { bytes, steps } = mutate(seed.bytes, 24_000 + i);
      try {
        importAnnotation(bytes, WIDTH, HEIGHT);
        outcomes.imported++;
      } catch (error) {
        if (error instanceof AnnotationImportError && [413, 415, 422].includes(importErrorStatus(error.kind))) outcomes.refused++;
        else failures.push(`case ${i} (${seed.name}: ${steps.join(", ")}): ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`);
      }
      if (failures.length >= 10) break;
    }
    expect(failures).toEqual([]);
    expect(outcomes.imported).toBeGreaterThan(0);
    expect(outcomes.refused).toBeGreaterThan(0);
  });
});
