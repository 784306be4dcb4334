// The plots card's data and sentences (assets/plot-values.js, with plot-drawing.js's histogram):
// the browser test (test/e2e/dashboard.test.ts) drags across the drawn plots; this one checks the
// counts and words those drags produce.
import { describe, expect, it } from "vitest";
// The page's scripts are plain JS, type-checked from their JSDoc by tsc -p worker/dashboard/public, not here.
// @ts-expect-error TS7016: the worker's tsconfig reads no JavaScript, so the module has no types here
import * as drawing from "../../worker/dashboard/public/dashboard/assets/plot-drawing.js";
// @ts-expect-error TS7016: as above
import * as script from "../../worker/dashboard/public/dashboard/assets/plot-values.js";

type Range = [number, number];
type Selection = { x: Range; y?: Range };
type PlotData = { x: Float64Array; y: Float64Array | null; xName: string; yName: string | null; cellCount: number; returned: number };
type Column = { name: string; group: string; description: string };

const decodeValues: (buffer: ArrayBuffer, paired: boolean) => { x: Float64Array; y: Float64Array | null } = script.decodeValues;
const noValuesText: (columns: Column[], name: string) => string = script.noValuesText;
const plotNote: (data: PlotData, plotted: number) => string = script.plotNote;
const pairedCount: (x: Float64Array, y: Float64Array) => number = script.pairedCount;
const selectedCount: (data: PlotData, selection: Selection) => number = script.selectedCount;
const cellTest: (data: PlotData, selection: Selection) => (props: Record<string, unknown>) => boolean = script.cellTest;
const selectionText: (data: PlotData, selection: Selection, selected: number) => string = script.selectionText;
const histogram: (values: Float64Array) => { lo: number; hi: number; counts: Uint32Array; finite: number } | null = drawing.histogram;

const histogramOf = (x: number[], cellCount = x.length): PlotData => ({
  x: Float64Array.from(x),
  y: null,
  xName: "area_px",
  yName: null,
  cellCount,
  returned: x.length,
});
const scatterOf = (x: number[], y: number[]): PlotData => ({
  x: Float64Array.from(x),
  y: Float64Array.from(y),
  xName: "area_px",
  yName: "perimeter_px",
  cellCount: x.length,
  returned: x.length,
});

describe("the plotted values", () => {
  it("are read as the worker sends them: little-endian Float64, x then y for each cell", () => {
    const bytes = new DataView(new ArrayBuffer(3 * 16));
    [1, 10, 2, Number.NaN, 3, 30].forEach((v, i) => bytes.setFloat64(i * 8, v, true));
    const { x, y } = decodeValues(bytes.buffer, true);
    expect([...x]).toEqual([1, 2, 3]);
    expect([...(y ?? [])]).toEqual([10, Number.NaN, 30]);
    expect(pairedCount(x, y ?? new Float64Array())).toBe(2);
    expect([...decodeValues(bytes.buffer, false).x]).toEqual([1, 10, 2, Number.NaN, 3, 30]);
  });

  it("are binned with every finite value counted once", () => {
    const bins = histogram(Float64Array.from([1, 2, 2, 3, Number.NaN, 10]));
    expect(bins?.finite).toBe(5);
    expect([...(bins?.counts ?? [])].reduce((a, b) => a + b, 0)).toBe(5);
  });
});

describe("what the card says", () => {
  it("names all the cells, or the sample, and those without a value", () => {
    expect(plotNote(histogramOf([1, 2, 3]), 3)).toBe("Showing 3 cells.");
    expect(plotNote(histogramOf([1, 2, 3, 4], 250_000), 3)).toBe("Showing an even sample of 4 of the 250,000 cells; 1 without a value are left out.");
  });

  it("says why a column has no values", () => {
    const columns = [
      { name: "area_um2", group: "calibrated", description: "" },
      { name: "cell_area_px", group: "cell", description: "" },
    ];
    expect(noValuesText(columns, "area_um2")).toBe("No values of area_um2: the image's pixel size is unknown.");
    expect(noValuesText(columns, "cell_area_px")).toBe("No values of cell_area_px: the prediction grew no cells around the nuclei.");
    expect(noValuesText(columns, "mean_ch1")).toBe("No values of mean_ch1 for these cells.");
  });
});

describe("a range chosen on the plot", () => {
  it("holds the cells within it, ends included, and never a cell without a value", () => {
    const data = histogramOf([5, 10, 15, 20, Number.NaN]);
    expect(selectedCount(data, { x: [10, 20] })).toBe(3);
    expect(selectedCount(data, { x: [-Infinity, Infinity] })).toBe(4);
    expect(selectionText(data, { x: [10, 20] }, 3)).toBe("area_px 10 – 20: 3 of 5 cells");
  });

  it("is a rectangle on a scatter", () => {
    const data = scatterOf([1, 2, 3, 4], [10, 20, 30, Number.NaN]);
    const rectangle: Selection = { x: [2, 4], y: [15, 40] };
    expect(selectedCount(data, rectangle)).toBe(2);
    expect(selectionText(data, rectangle, 2)).toBe("area_px 2 – 4, perimeter_px 15 – 40: 2 of 4 cells");
  });

  it("counts the sample, and says so, when the plot is one", () => {
    const data = histogramOf([1, 2, 3], 900_000);
    expect(selectionText(data, { x: [1, 2] }, 2)).toBe("area_px 1 – 2: 2 of the 3 sampled cells");
  });

  it("gives the viewer a test of each outline's own values, so unsampled cells are highlighted too", () => {
    const inScatter = cellTest(scatterOf([1], [1]), { x: [2, 4], y: [15, 40] });
    expect(inScatter({ area_px: 3, perimeter_px: 20 })).toBe(true);
    expect(inScatter({ area_px: 3, perimeter_px: 50 })).toBe(false);
    expect(inScatter({ area_px: 3, perimeter_px: null })).toBe(false);
    const inHistogram = cellTest(histogramOf([1]), { x: [2, 4] });
    expect(inHistogram({ area_px: 4 })).toBe(true);
    expect(inHistogram({ area_px: "4" })).toBe(false);
  });
});
