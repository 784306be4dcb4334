import { MAX_IMPORT_OBJECTS, MAX_IMPORT_PIXELS } from "../../annotations/limits.ts";
import { describePixelSize } from "../../../schema/image-formats/calibration.ts";
import { PNG_MAX_LABEL } from "../../../schema/label-png-limit.ts";
import type { MeasurementState } from "../../services/measurement-state.ts";
import type { Segmentation } from "../../services/segmentations.ts";
import { formatDate, Layout, type PageContext } from "../layout.tsx";
import { ViewerCanvas, ZoomControls } from "./viewer-parts.tsx";

const EXPORTS = ["measurements.csv", "rois.geojson", "rois.zip", "masks.png", "masks.tif"] as const;

/** What each download is, shown on hover. */
const TITLES: Record<(typeof EXPORTS)[number], string> = {
  "measurements.csv": "One row of measurements per cell",
  "rois.geojson": "Cell outlines as GeoJSON polygons (QuPath, GIS tools)",
  "rois.zip": "Cell outlines for ImageJ/Fiji's ROI Manager",
  "masks.png": "Label image, 16-bit PNG: each cell's pixels hold its number, 0 is background",
  "masks.tif": "Label image, 32-bit tiled TIFF, for any number of cells (Fiji: File > Import > Bio-Formats; QuPath, napari)",
};

/** masks.png holds at most 65,535 cells; masks.tif any number. */
const exportsFor = (roiCount: number) => EXPORTS.filter((f) => f !== "masks.png" || roiCount <= PNG_MAX_LABEL);

/** What the cell panel says of an import's intensities while they are not there. */
function intensitiesNote(measurements: MeasurementState): string | null {
  if (measurements.status === "measuring") return "being measured from the image; shown here when done";
  if (measurements.status === "failed") return `not measured: ${measurements.detail}`;
  if (measurements.status === "not_measured") return "not measured (imported before imports were measured)";
  return null;
}

/** The segmentation: its cells, what made it and at which size, and how its image is calibrated. */
function SegmentationFacts(props: { segmentation: Segmentation; unmeasured: string | null }) {
  const s = props.segmentation;
  const { unmeasured } = props;
  return (
    <div class="card">
      <div class="cell-count">
        <span id="cell-count">{s.roiCount.toLocaleString("en-US")}</span> cells
      </div>
      <dl class="facts">
        <dt>Image</dt>
        <dd>{`${s.width} × ${s.height} px`}</dd>
        <dt>Model</dt>
        <dd>{s.modelName ? `${s.modelName} v${s.modelVersion}` : s.source}</dd>
        <dt>Confluency</dt>
        <dd>{(s.confluency * 100).toFixed(1)}%</dd>
        {s.diameter !== null && (
          <>
            <dt>Diameter</dt>
            <dd>{s.diameter.toFixed(1)} px</dd>
          </>
        )}
        {s.diameterReason && (
          <>
            <dt>Diameter from</dt>
            <dd id="diameter-reason">{s.diameterReason}</dd>
          </>
        )}
        {s.modality && (
          <>
            <dt>Modality</dt>
            <dd>{`${s.modality} (${s.modalitySource})`}</dd>
          </>
        )}
        <dt>Pixel size</dt>
        <dd>
          {s.pixelSizeXUm !== null && s.pixelSizeYUm !== null && s.pixelSizeSource !== null
            ? describePixelSize(s.pixelSizeXUm, s.pixelSizeYUm, s.pixelSizeSource)
            : "unknown: no µm measurements"}
        </dd>
        {unmeasured && (
          <>
            <dt>Intensities</dt>
            <dd id="intensities-state">{unmeasured}</dd>
          </>
        )}
        <dt>Created</dt>
        <dd>{formatDate(s.createdAt)}</dd>
      </dl>
    </div>
  );
}

/** Correcting cells (assets/viewer-edit.js): select and delete, draw, undo and redo, save as an import. */
function EditCard() {
  return (
    <div class="card edit" id="edit-card">
      <h3>Correct cells</h3>
      <p class="note" id="restored-note" hidden>
        Unsaved corrections from your last visit are back: choose Edit cells to save or discard them.
      </p>
      <button type="button" class="button" id="edit-toggle">
        Edit cells
      </button>
      <div id="edit-tools" hidden>
        <div class="edit-buttons">
          <button type="button" class="button" id="draw-cell" title="Click the new cell's corners; double-click or Enter closes it, Esc cancels">
            Draw cell
          </button>
          <button type="button" class="button" id="delete-cell" title="Delete the selected cell (Delete key)">
            Delete cell
          </button>
          <button type="button" class="button" id="undo" title="Ctrl+Z">
            Undo
          </button>
          <button type="button" class="button" id="redo" title="Ctrl+Shift+Z">
            Redo
          </button>
        </div>
        <p class="muted">Click a cell to select it, then Delete. Draw cell: click its corners, double-click or Enter to close.</p>
        <p id="edit-summary">No corrections yet.</p>
        <div class="edit-buttons">
          <button type="button" class="button primary" id="save-corrections">
            Save corrections
          </button>
          <button type="button" class="button" id="discard-corrections">
            Discard
          </button>
        </div>
        <p class="muted" id="save-problem"></p>
      </div>
    </div>
  );
}

/** How the outlines are shown, and the zoom. */
function DisplayControls() {
  return (
    <div class="card controls">
      <label class="check">
        <input type="checkbox" id="show-outlines" checked /> Show outlines
      </label>
      <label>
        <span>Outline opacity</span>
        <input type="range" id="outline-opacity" min="0" max="1" step="0.05" value="0.9" />
      </label>
      <ZoomControls />
    </div>
  );
}

/** The exports this segmentation can have. */
function Downloads(props: { segmentation: Segmentation }) {
  const s = props.segmentation;
  return (
    <div class="card downloads">
      <h3>Download</h3>
      {exportsFor(s.roiCount).map((f) => (
        <a class="button" href={`/dashboard/api/export/${s.id}/${f}`} download data-export={f} title={TITLES[f]}>
          {f}
        </a>
      ))}
    </div>
  );
}

/** A histogram or scatter of the cells' measurements (assets/plots.js). */
function PlotsCard() {
  return (
    <div class="card plots" id="plots">
      <h3>Plots</h3>
      <label>
        <span>Column</span>
        <select id="plot-x" title="The histogram's column, or the scatter's x"></select>
      </label>
      <label>
        <span>Against</span>
        <select id="plot-y" title="A second column makes the plot a scatter of the two">
          <option value="">nothing: a histogram</option>
        </select>
      </label>
      <canvas id="plot-canvas" aria-label="Plot of the chosen columns; drag across it to choose a range"></canvas>
      <p class="muted" id="plot-note">
        Loading…
      </p>
      <div class="plot-selection">
        <span id="plot-selection"></span>
        <button type="button" class="button" id="plot-clear" hidden>
          Clear
        </button>
      </div>
    </div>
  );
}

/** The measurements of the cell under the pointer (filled by assets/viewer.js). */
function CellInfo() {
  return (
    <div class="card" id="cell-info">
      <h3>Cell under the pointer</h3>
      <p class="muted" id="cell-empty">
        Point at a cell to see its measurements.
      </p>
      <dl class="facts" id="cell-facts" hidden></dl>
    </div>
  );
}

export function ViewerPage(props: { page: PageContext; segmentation: Segmentation; measurements: MeasurementState }) {
  const s = props.segmentation;
  const unmeasured = intensitiesNote(props.measurements);
  return (
    <Layout page={props.page} section="images" title={`Cells · ${s.imageName}`} scripts={["viewer.js"]} wide>
      <p class="crumbs">
        <a href="/dashboard">Images</a> / <a href={`/dashboard/images/${s.imageId}`}>{s.imageName}</a> / segmentation
      </p>
      <div class="viewer-layout">
        <div
          class="viewer"
          id="viewer"
          data-segmentation-id={s.id}
          data-image-id={s.imageId}
          data-width={s.width}
          data-height={s.height}
          data-roi-count={s.roiCount}
          data-measurements={props.measurements.status}
          data-import-max-pixels={MAX_IMPORT_PIXELS}
          data-import-max-cells={MAX_IMPORT_OBJECTS}
          data-pixel-size-x-um={s.pixelSizeXUm ?? undefined}
        >
          <ViewerCanvas />
        </div>
        <aside class="viewer-side">
          <SegmentationFacts segmentation={s} unmeasured={unmeasured} />
          <EditCard />
          <DisplayControls />
          <Downloads segmentation={s} />
          <PlotsCard />
          <CellInfo />
        </aside>
      </div>
    </Layout>
  );
}
