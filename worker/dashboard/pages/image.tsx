import type { MaskDefaults } from "../../../schema/mask-defaults.ts";
import { describePixelSize, MICROSCOPE_PIXEL_SIZE_UM } from "../../../schema/image-formats/calibration.ts";
import { MODALITIES, type Modality } from "../../../schema/modality.ts";
import { CELLPROB_THRESHOLD_RANGE, FLOW_THRESHOLD_RANGE } from "../../../schema/work-limits.ts";
import { recommendedModel } from "../../../schema/model-recommendations.ts";
import type { Image } from "../../services/images.ts";
import type { predictionView } from "../../services/job-views.ts";
import type { Model } from "../../services/models.ts";
import type { Segmentation } from "../../services/segmentations.ts";
import { Bar, formatBytes, formatDate, Layout, type PageContext } from "../layout.tsx";
import { ListTable } from "../list-table.tsx";
import { predictionStage } from "../prediction-stage.ts";
import { madeBy } from "./compare.tsx";
import { ViewerCanvas, ZoomControls } from "./viewer-parts.tsx";
import { StatusBadge } from "./images.tsx";

type Prediction = ReturnType<typeof predictionView>;

/** A number left blank to the model; `hint` is the placeholder (the mask parameters' are set by the page's script). */
function NumberField(props: { name: string; label: string; hint?: string; step?: string; min?: string; max?: string }) {
  return (
    <label>
      <span>{props.label}</span>
      <input type="number" name={props.name} step={props.step ?? "any"} min={props.min} max={props.max} placeholder={props.hint} />
    </label>
  );
}

/** What the image is: its format, size, pyramid, objective, channels and pixel size. */
function ImageFacts(props: { image: Image }) {
  const { image } = props;
  const ready = image.status === "ready";
  return (
    <section class="card">
      <h2>
        {image.name} <StatusBadge status={image.status} />
      </h2>
      <dl class="facts">
        <dt>Format</dt>
        <dd id="format">{image.formatName ?? image.format ?? "—"}</dd>
        <dt>Dimensions</dt>
        <dd>{image.width ? `${image.width} × ${image.height} px` : "—"}</dd>
        {image.levels && image.levels.length > 0 && (
          <>
            <dt>Pyramid</dt>
            <dd id="pyramid">
              full resolution read; {image.levels.length} reduced level{image.levels.length === 1 ? "" : "s"}:{" "}
              {image.levels.map((level) => `${level.width} × ${level.height}`).join(", ")}
            </dd>
          </>
        )}
        {image.objectiveMagnification !== null && (
          <>
            <dt>Objective</dt>
            <dd id="objective">{image.objectiveMagnification}x</dd>
          </>
        )}
        <dt>Channels</dt>
        <dd>{image.channels ?? "—"}</dd>
        <dt>Bit depth</dt>
        <dd>{image.bitDepth ?? "—"}</dd>
        <dt>Pixel size</dt>
        <dd id="pixel-size">
          {image.pixelSizeXUm !== null && image.pixelSizeYUm !== null && image.pixelSizeSource !== null
            ? describePixelSize(image.pixelSizeXUm, image.pixelSizeYUm, image.pixelSizeSource)
            : ready
              ? "unknown: give one with a prediction for µm measurements"
              : "—"}
        </dd>
        <dt>Size</dt>
        <dd>{formatBytes(image.size)}</dd>
        <dt>Uploaded</dt>
        <dd>{formatDate(image.createdAt)}</dd>
      </dl>
      {image.uploadError && <p class="error-text">{image.uploadError}</p>}
      {image.pixelSizeWarning && (
        <p class="warning" id="pixel-size-warning">
          {image.pixelSizeWarning}
        </p>
      )}
    </section>
  );
}

/** The prediction form, its model offered first the one recommended for the modality detected (schema/model-recommendations.ts). */
function PredictForm(props: { image: Image; models: Model[]; maskDefaults: Record<string, Record<Modality, MaskDefaults>>; detected: Modality | "" }) {
  const { image, models, detected } = props;
  const ready = image.status === "ready";
  const recommended = detected ? recommendedModel(detected) : undefined;
  return (
    <section class="card">
      <h2>Run a prediction</h2>
      {!ready && <p class="muted">The image is {image.status}; predictions start once it is ready.</p>}
      <form id="predict-form" data-image-id={image.id} data-detected-modality={detected} class="form-grid">
        <label class="full">
          <span>Model</span>
          <select name="model_id">
            {models.map((m) => (
              <option
                value={m.id}
                selected={m.id === recommended && m.orgId === null}
                data-mask-defaults={JSON.stringify(props.maskDefaults[m.id])}
              >{`${m.name} v${m.version}${m.orgId ? " (yours)" : ""}${m.id === recommended && m.orgId === null ? ` (recommended for ${detected})` : ""}`}</option>
            ))}
          </select>
        </label>
        <NumberField name="diameter" label="Diameter (px)" hint="auto" min="1" />
        <label>
          <span>Modality</span>
          <select name="modality">
            <option value="">auto</option>
            {MODALITIES.map((m) => (
              <option value={m}>{m}</option>
            ))}
          </select>
        </label>
        <NumberField
          name="cellprob_threshold"
          label="Cell probability threshold"
          min={String(CELLPROB_THRESHOLD_RANGE.min)}
          max={String(CELLPROB_THRESHOLD_RANGE.max)}
        />
        <NumberField name="flow_threshold" label="Flow threshold" min={String(FLOW_THRESHOLD_RANGE.min)} max={String(FLOW_THRESHOLD_RANGE.max)} />
        <NumberField name="min_size" label="Minimum size (px)" step="1" min="0" />
        <NumberField
          name="pixel_size_um"
          label="Pixel size (µm)"
          hint={image.pixelSizeXUm !== null ? `the file's: ${image.pixelSizeXUm}` : "unknown"}
          min={String(MICROSCOPE_PIXEL_SIZE_UM.min)}
          max={String(MICROSCOPE_PIXEL_SIZE_UM.max)}
        />
        <label>
          <span>Channel to segment</span>
          <input type="number" name="channel" step="1" min="0" max={String(image.channels ?? 64)} placeholder="0 = mean of all" />
        </label>
        <div class="full">
          <button type="submit" class="primary" disabled={!ready}>
            Run prediction
          </button>
          <span id="predict-error" class="error-text"></span>
        </div>
        <p class="full muted" id="predict-defaults"></p>
      </form>
    </section>
  );
}

/** The image in the viewer (viewer.js), zoomed and panned over its preview tiles. */
function ImagePreview(props: { image: Image }) {
  const { image } = props;
  return (
    <section>
      <h2>Preview</h2>
      <div class="image-preview">
        <div
          class="viewer"
          id="viewer"
          data-image-id={image.id}
          data-width={image.width}
          data-height={image.height}
          data-pixel-size-x-um={image.pixelSizeXUm ?? undefined}
        >
          <ViewerCanvas />
        </div>
        <ZoomControls />
      </div>
    </section>
  );
}

/** The image's predictions, their progress refreshed by the page's script. */
function PredictionsList(props: { predictions: Prediction[] }) {
  const { predictions } = props;
  return (
    <section>
      <h2>Predictions</h2>
      <ListTable
        id="predictions"
        headings={["Submitted", "Model", "Status", "Progress", "Cells", ""]}
        items={predictions}
        empty="No predictions yet."
        row={(p) => (
          <tr data-prediction-id={p.prediction_id} data-status={p.status}>
            <td>{p.created_at ? formatDate(Date.parse(p.created_at)) : "—"}</td>
            <td class="model">{p.model_id}</td>
            <td class="status">
              <StatusBadge status={p.status} />
            </td>
            <td class="progress">
              <Bar fraction={p.progress} />
              <span class="stage muted">{predictionStage(p)}</span>
            </td>
            <td class="cells">{p.cell_count ?? "—"}</td>
            <td class="actions">
              {p.segmentation_id && (
                <a class="button small" href={`/dashboard/segmentations/${p.segmentation_id}`}>
                  View cells
                </a>
              )}
            </td>
          </tr>
        )}
      />
    </section>
  );
}

/** The image's segmentations, predicted and imported, each opening in the viewer. */
/** Two of the image's segmentations to see side by side (pages/compare.tsx), the two most recent first. */
function CompareForm(props: { imageId: string; segmentations: Segmentation[] }) {
  const { segmentations } = props;
  const choice = (name: string, label: string, chosen: Segmentation | undefined) => (
    <label>
      <span>{label}</span>
      <select name={name}>
        {segmentations.map((s) => (
          <option value={s.id} selected={s.id === chosen?.id}>
            {`${madeBy(s)} · ${s.roiCount.toLocaleString("en-US")} cells · ${formatDate(s.createdAt)}`}
          </option>
        ))}
      </select>
    </label>
  );
  return (
    <form method="get" action={`/dashboard/images/${props.imageId}/compare`} class="compare-form">
      {choice("a", "Compare", segmentations[0])}
      {choice("b", "with", segmentations[1])}
      <button type="submit" class="button small">
        Side by side
      </button>
    </form>
  );
}

function SegmentationsList(props: { imageId: string; segmentations: Segmentation[] }) {
  const { segmentations } = props;
  return (
    <section>
      <h2>Segmentations</h2>
      {segmentations.length >= 2 && <CompareForm imageId={props.imageId} segmentations={segmentations} />}
      <ListTable
        headings={["Created", "Source", "Model", "Cells", "Confluency", ""]}
        items={segmentations}
        row={(s) => (
          <tr>
            <td>{formatDate(s.createdAt)}</td>
            <td>{s.source}</td>
            <td class="model">{s.modelName ? `${s.modelName} v${s.modelVersion}` : "—"}</td>
            <td>{s.roiCount}</td>
            <td>{(s.confluency * 100).toFixed(1)}%</td>
            <td class="actions">
              <a class="button small" href={`/dashboard/segmentations/${s.id}`}>
                View cells
              </a>
            </td>
          </tr>
        )}
      />
    </section>
  );
}

export function ImagePage(props: {
  page: PageContext;
  image: Image;
  models: Model[];
  /** Each model's effective mask defaults per modality (services/models.ts maskDefaultsOf). */
  maskDefaults: Record<string, Record<Modality, MaskDefaults>>;
  predictions: Prediction[];
  segmentations: Segmentation[];
  /** What the image's preview found its pixels to be, if a preview was made. */
  previewModality: Modality | null;
}) {
  const { image, segmentations } = props;
  // What "auto" will most likely pick: the modality detected on this image last time, else by its preview.
  const detected = segmentations.find((s) => s.modality && s.modalitySource === "detected")?.modality ?? props.previewModality ?? "";
  const ready = image.status === "ready";
  return (
    <Layout page={props.page} section="images" title={image.name} scripts={ready ? ["viewer.js"] : []}>
      <p class="crumbs">
        <a href="/dashboard">Images</a> / {image.name}
      </p>
      <div class="columns">
        <ImageFacts image={image} />
        <PredictForm image={image} models={props.models} maskDefaults={props.maskDefaults} detected={detected} />
      </div>
      {ready && <ImagePreview image={image} />}
      <PredictionsList predictions={props.predictions} />
      {segmentations.length > 0 && <SegmentationsList imageId={image.id} segmentations={segmentations} />}
    </Layout>
  );
}
