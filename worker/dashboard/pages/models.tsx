import type { JobRecord, TrainingMetrics } from "../../../schema/api-records.ts";
import type { Model } from "../../services/models.ts";
import type { TrainableImage } from "../../services/trainings.ts";
import { trainingBase } from "../../../schema/model-recommendations.ts";
import { learnedNothing, trainingOutcomeText, unverified } from "../../../schema/training-outcome.ts";
import { Bar, counted, formatDate, Layout, type PageContext } from "../layout.tsx";
import { ListTable } from "../list-table.tsx";
import { StatusBadge } from "./images.tsx";

const ap = (v: unknown) => (typeof v === "number" ? v.toFixed(3) : "—");

/** A model's training, in a line: its scores (fine-tuned against base), steps and images. */
function metrics(training: unknown): string {
  if (!training || typeof training !== "object") return "—";
  const t = training as Record<string, unknown>;
  const parts: string[] = [];
  const scored = (t.metrics ?? null) as (TrainingMetrics & { fine_tuned?: unknown }) | null;
  const validation = (t.validation ?? {}) as Record<string, unknown>;
  if (scored?.fine_tuned && learnedNothing(scored)) {
    const why = scored.evidence?.verdict === "too_few_to_tell" ? "too few to tell a gain" : "not beaten";
    parts.push(`same as base: AP@0.5 ${ap(scored.base.ap50)}, ${why}`);
  } else if (scored?.fine_tuned && unverified(scored)) {
    parts.push(`unverified: AP@0.5 ${ap(scored.fine_tuned.ap50)} (base ${ap(scored.base?.ap50)}), could be noise`);
  } else if (scored?.fine_tuned) parts.push(`AP@0.5 ${ap(scored.fine_tuned.ap50)} (base ${ap(scored.base?.ap50)})`);
  else if (typeof validation.ap50_after === "number") {
    const before = typeof validation.ap50_before === "number" ? ` (base ${validation.ap50_before.toFixed(3)})` : "";
    parts.push(`AP@0.5 ${validation.ap50_after.toFixed(3)}${before}`);
  }
  if (typeof t.steps === "number") parts.push(counted(t.steps, "step"));
  if (Array.isArray(t.image_ids)) parts.push(counted(t.image_ids.length, "image"));
  return parts.length ? parts.join(" · ") : "—";
}

/** A training job's outcome in words; the script renders the same while it runs (dashboard.js trainingOutcome). */
function outcome(job: JobRecord): string {
  if (job.status === "FAILED") return job.reason ?? "failed";
  if (job.status !== "COMPLETED") return ""; // the progress column says what it is doing
  return job.metrics ? trainingOutcomeText(job.metrics) : "done";
}

function TrainingForm(props: { models: Model[]; images: TrainableImage[] }) {
  // The base selected to start with: the one recommended for the images selected to start with
  // (the corrected ones; all where none is), as the client's `train` picks it.
  const corrected = props.images.filter((i) => i.segmentationSource === "import");
  const base = trainingBase((corrected.length ? corrected : props.images).map((i) => i.modality));
  if (props.images.length === 0) {
    return (
      <p class="empty">
        No image has a segmentation to learn from yet: segment an image, or import a corrected segmentation (POST /api/v1/segmentation), then come back.
      </p>
    );
  }
  return (
    <form id="training-form" class="card">
      <p class="muted">
        Fine-tune a model on the images' most recent segmentations. An image you corrected (in the viewer's Edit cells, or imported) is learned from its
        correction, and those are selected to start with. The new model appears above when the training completes, marked "same as base" if it did not beat the
        base on the regions of the images held out from training, "unverified" if it scored higher by what could be noise (compare the two on your images).
      </p>
      <ListTable
        id="trainable-images"
        compact
        headings={["", "Image", "Size", "Learns from"]}
        items={props.images}
        row={(i) => (
          <tr>
            <td>
              <input
                type="checkbox"
                name="image_id"
                value={i.id}
                aria-label={`Train on ${i.name}`}
                data-source={i.segmentationSource}
                checked={i.segmentationSource === "import"}
              />
            </td>
            <td>{i.name}</td>
            <td>{i.width ? `${i.width} × ${i.height}` : "—"}</td>
            <td>
              {i.segmentationSource === "import" ? <span class="badge completed">corrected</span> : <span class="badge">predicted only</span>}
              {` ${i.cellCount} cells`}
            </td>
          </tr>
        )}
      />
      <div class="form-grid">
        <label>
          <span>Base model</span>
          <select name="model_id">
            {props.models.map((m) => (
              <option value={m.id} selected={m.id === base.modelId}>{`${m.name} v${m.version}${m.orgId ? " (yours)" : ""}`}</option>
            ))}
          </select>
          <span class="muted" id="training-base-reason">{`${base.modelId}: ${base.reason}`}</span>
        </label>
        <label>
          <span>Name of the new model</span>
          <input type="text" name="name" maxlength={100} placeholder="e.g. my-nuclei" />
        </label>
        <label>
          <span>Steps</span>
          <input type="number" name="steps" min="1" step="1" placeholder="the plan's time budget" />
        </label>
        <p class="full warning" id="training-warning" hidden>
          Every selected image would be learned from the model's own predictions, which teach it nothing new: correct a few cells first (open an image's cells,
          Edit cells, Save corrections).
        </p>
        <div class="full">
          <button type="submit" class="primary">
            Start training
          </button>
          <span id="training-error" class="error-text"></span>
        </div>
      </div>
    </form>
  );
}

export function ModelsPage(props: { page: PageContext; models: Model[]; trainable: TrainableImage[]; trainings: JobRecord[] }) {
  const own = props.models.filter((m) => m.orgId !== null);
  const pub = props.models.filter((m) => m.orgId === null);
  const table = (models: Model[], empty: string) =>
    models.length === 0 ? (
      <p class="empty">{empty}</p>
    ) : (
      <ListTable
        headings={["Name", "Version", "Description", "Training", "Created"]}
        items={models}
        row={(m) => (
          <tr data-model-id={m.id}>
            <td class="model">
              <strong>{m.name}</strong>
              <div class="muted mono">{m.id}</div>
            </td>
            <td>{m.version}</td>
            <td>{m.description ?? "—"}</td>
            <td>{metrics(m.training)}</td>
            <td>{formatDate(m.createdAt)}</td>
          </tr>
        )}
      />
    );
  return (
    <Layout page={props.page} section="models" title="Models">
      <section id="own-models">
        <h2>Your organization's models</h2>
        {table(own, "No models of your own yet: start a training below.")}
      </section>
      <section>
        <h2>Start a training</h2>
        <TrainingForm models={props.models} images={props.trainable} />
      </section>
      <section>
        <h2>Trainings</h2>
        <ListTable
          id="trainings"
          headings={["Submitted", "Base model", "Images", "Status", "Progress", "Result"]}
          items={props.trainings}
          empty="No trainings yet."
          row={(t) => (
            <tr data-job-id={t.job_id} data-status={t.status}>
              <td>{formatDate(Date.parse(t.created_at))}</td>
              <td class="model">{t.model_id}</td>
              <td>{t.image_ids.length}</td>
              <td class="status">
                <StatusBadge status={t.status} />
              </td>
              <td class="progress">
                <Bar fraction={t.progress} />
                <span class="stage muted">{t.status === "STARTED" || t.status === "SUBMITTED" ? t.stage : ""}</span>
              </td>
              <td class="result">{outcome(t)}</td>
            </tr>
          )}
        />
      </section>
      <section>
        <h2>Public models</h2>
        {table(pub, "No public models.")}
      </section>
    </Layout>
  );
}
