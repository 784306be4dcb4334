// @ts-check
// cellseg dashboard: API keys, uploads, deletions, predictions and trainings. Plain JS, no build step.
// Every state-changing call sends the session's CSRF token; the session cookie does the rest.
import { predictionStage } from "./prediction-stage.js";

const csrfToken = document.querySelector('meta[name="csrf-token"]')?.getAttribute("content") ?? "";

/**
 * The page's element of this id, of the class given, or null where the page has none (an image's
 * own page shows the viewer without the segmentation's controls).
 * @template {HTMLElement} T
 * @param {string} id
 * @param {{ new (): T, prototype: T }} type
 * @returns {T | null}
 */
export function optionalById(id, type) {
  const element = document.getElementById(id);
  return element instanceof type ? element : null;
}

/**
 * The page's element of this id, of the class given (HTMLElement when none is); throws when the
 * page has no such element, a page and its script out of step, rather than failing later on null.
 * @template {HTMLElement} [T=HTMLElement]
 * @param {string} id
 * @param {{ new (): T, prototype: T }} [type]
 * @returns {T}
 */
export function byId(id, type) {
  const element = document.getElementById(id);
  if (!(element instanceof (type ?? HTMLElement))) throw new Error(`the page has no ${type?.name ?? "element"} #${id}`);
  return /** @type {T} */ (element);
}

/** An API call's failure: its message from the answer's detail, and the HTTP status. */
export class ApiError extends Error {
  /**
   * @param {string} message
   * @param {number} status
   */
  constructor(message, status) {
    super(message);
    this.status = status;
  }
}

/**
 * Calls the dashboard's API (/dashboard/api{path}) with the session and its CSRF token; returns the
 * answer's JSON (null when empty), throws an ApiError (with the status) when it is not a success.
 * The answers' shapes are the API's (worker/dashboard/api.ts); each caller names the one it reads
 * (T, from the type it puts the answer in), unknown where it reads none.
 * @template [T=unknown]
 * @param {string} path
 * @param {{ method?: string, json?: unknown, body?: BodyInit }} [options]
 * @returns {Promise<T>}
 */
export async function api(path, { method = "GET", json, body } = {}) {
  /** @type {Record<string, string>} */
  const headers = { "X-CSRF-Token": csrfToken };
  if (json !== undefined) {
    headers["Content-Type"] = "application/json";
    body = JSON.stringify(json);
  }
  const response = await fetch(`/dashboard/api${path}`, { method, headers, body, credentials: "same-origin" });
  const text = await response.text();
  const data = text ? JSON.parse(text) : null;
  if (!response.ok) throw new ApiError(describe(data?.detail) || `${response.status} ${response.statusText}`, response.status);
  return data;
}

/**
 * An error answer's detail in words: a string as it is, a validation's list as "field: message; ...".
 * @param {unknown} detail
 */
function describe(detail) {
  if (Array.isArray(detail)) return detail.map((/** @type {{ loc?: string[], msg: string }} */ d) => `${d.loc?.slice(1).join(".")}: ${d.msg}`).join("; ");
  return typeof detail === "string" ? detail : "";
}

/**
 * An element with attributes ("class", "data-*", or any of the element's own properties: href,
 * type) and children.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Record<string, string>} [attrs]
 * @param {...(Node | string)} children
 * @returns {HTMLElementTagNameMap[K]}
 */
const el = (tag, attrs = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k.startsWith("data-") || !(k in node)) node.setAttribute(k, v);
    else Reflect.set(node, k, v);
  }
  node.append(...children);
  return node;
};

/** @param {string | null | undefined} iso */
const fmtDate = (iso) => (iso ? `${iso.slice(0, 16).replace("T", " ")} UTC` : "—");
/** @param {number} ms */
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
/** An error's message, whatever was thrown. @param {unknown} error */
const messageOf = (error) => (error instanceof Error ? error.message : String(error));
/**
 * The element an event happened on, when it is one (a click's target may be a text node's parent).
 * @param {Event} event
 */
const targetOf = (event) => (event.target instanceof Element ? event.target : null);
/**
 * The element of `selector` inside `root`, of `type`; throws when there is none.
 * @template {Element} T
 * @param {ParentNode} root
 * @param {string} selector
 * @param {{ new (): T, prototype: T }} type
 * @returns {T}
 */
function find(root, selector, type) {
  const found = root.querySelector(selector);
  if (!(found instanceof type)) throw new Error(`no ${type.name} ${selector} on the page`);
  return found;
}
/**
 * A form's control by name, of `type`; throws when the form has none.
 * @template {Element} T
 * @param {HTMLFormElement} form
 * @param {string} name
 * @param {{ new (): T, prototype: T }} type
 * @returns {T}
 */
function field(form, name, type) {
  const control = form.elements.namedItem(name);
  if (!(control instanceof type)) throw new Error(`the form #${form.id} has no ${type.name} named ${name}`);
  return control;
}

// ---- API keys ----------------------------------------------------------------------------------
/** An API key as /keys lists it. */
/** @typedef {{ id: string, name: string | null, prefix: string, created_at: string, last_used_at: string | null, revoked_at: string | null }} ApiKey */

function setUpKeys() {
  const form = document.getElementById("create-key");
  if (!(form instanceof HTMLFormElement)) return;
  const tbody = find(document, "#keys tbody", HTMLTableSectionElement);
  const value = byId("new-key-value");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const button = find(form, "button", HTMLButtonElement);
    button.disabled = true;
    try {
      /** @type {ApiKey & { key: string }} */
      const created = await api("/keys", { method: "POST", json: { name: field(form, "name", HTMLInputElement).value.trim() || undefined } });
      value.textContent = created.key;
      byId("new-key").hidden = false;
      tbody.querySelector(".empty-row")?.remove();
      tbody.prepend(keyRow(created));
      form.reset();
    } catch (error) {
      alert(`Could not create the key: ${messageOf(error)}`);
    } finally {
      button.disabled = false;
    }
  });
  const copy = byId("copy-key");
  copy.addEventListener("click", async () => {
    const text = value.textContent ?? "";
    try {
      await navigator.clipboard.writeText(text);
    } catch {
      const range = document.createRange();
      range.selectNodeContents(value);
      getSelection()?.removeAllRanges();
      getSelection()?.addRange(range);
      document.execCommand("copy");
    }
    copy.textContent = "Copied";
    setTimeout(() => (copy.textContent = "Copy"), 2000);
  });
  tbody.addEventListener("click", async (event) => {
    const button = targetOf(event)?.closest("[data-revoke-key]");
    if (!(button instanceof HTMLButtonElement)) return;
    const id = button.dataset.revokeKey;
    if (!confirm(`Revoke the key "${button.dataset.label}"? Programs using it are refused at once. This cannot be undone.`)) return;
    button.disabled = true;
    try {
      /** @type {ApiKey} */
      const revoked = await api(`/keys/${id}/revoke`, { method: "POST" });
      button.closest("tr")?.replaceWith(keyRow(revoked));
    } catch (error) {
      button.disabled = false;
      alert(`Could not revoke the key: ${messageOf(error)}`);
    }
  });
}

/** @param {ApiKey} k */
function keyRow(k) {
  const state = k.revoked_at ? el("span", { class: "badge failed" }, "revoked") : el("span", { class: "badge ready" }, "active");
  const actions = el("td", { class: "actions" });
  if (!k.revoked_at)
    actions.append(el("button", { type: "button", class: "danger small", "data-revoke-key": k.id, "data-label": k.name ?? k.prefix }, "Revoke"));
  return el(
    "tr",
    { "data-key-id": k.id, class: k.revoked_at ? "revoked" : "" },
    el("td", {}, k.name ?? el("span", { class: "muted" }, "unnamed")),
    el("td", {}, el("code", {}, `${k.prefix}…`)),
    el("td", {}, fmtDate(k.created_at)),
    el("td", {}, k.last_used_at ? fmtDate(k.last_used_at) : el("span", { class: "muted" }, "never")),
    el("td", {}, state),
    actions,
  );
}

// ---- Sign-in link sessions ---------------------------------------------------------------------
function setUpSessions() {
  const table = document.getElementById("sessions");
  if (!table) return;
  table.addEventListener("click", async (event) => {
    const button = targetOf(event)?.closest("[data-revoke-session]");
    if (!(button instanceof HTMLButtonElement)) return;
    const current = button.dataset.current === "true";
    const question = current
      ? "Revoke this browser's session? You will be signed out."
      : "Revoke this session? That browser is signed out at its next request.";
    if (!confirm(question)) return;
    button.disabled = true;
    try {
      await api(`/sessions/${button.dataset.revokeSession}/revoke`, { method: "POST" });
      if (current) location.assign("/dashboard/signed-out");
      else button.closest("tr")?.remove();
    } catch (error) {
      button.disabled = false;
      alert(`Could not revoke the session: ${messageOf(error)}`);
    }
  });
}

// ---- Uploads -----------------------------------------------------------------------------------
/** Files above this go through the resumable protocol (parts, each retried), smaller ones stream in one request. */
const RESUMABLE_FROM = 8 * 1024 * 1024;
const PART_ATTEMPTS = 4;
const PARALLEL_PARTS = 3;

/** An image as the upload calls answer it. */
/** @typedef {{ id: string, width: number, height: number, upload_status?: string, upload_error?: string | null }} UploadedImage */
/** @typedef {{ progress(fraction: number, text: string): void, done(text: string): void, fail(text: string): void }} UploadItem */

/**
 * A line in the uploads list for one file: its name, a progress bar and its state.
 * @param {File} file
 * @returns {UploadItem}
 */
function uploadItem(file) {
  const fill = el("div", { "data-fraction": "0" });
  const bar = el("div", { class: "bar" }, fill);
  const state = el("span", { class: "state" }, "waiting");
  const item = el("li", { "data-upload-name": file.name }, el("span", {}, file.name), bar, state);
  byId("uploads").append(item);
  return {
    progress(fraction, text) {
      fill.style.width = `${(fraction * 100).toFixed(1)}%`;
      state.textContent = text;
    },
    done(text) {
      item.classList.add("done");
      fill.style.width = "100%";
      state.textContent = text;
    },
    fail(text) {
      item.classList.add("failed");
      state.textContent = text;
    },
  };
}

/**
 * @param {File} file
 * @param {UploadItem} item
 * @returns {Promise<UploadedImage>}
 */
function streamUpload(file, item) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", "/dashboard/api/upload");
    xhr.setRequestHeader("X-CSRF-Token", csrfToken);
    xhr.upload.onprogress = (e) => e.lengthComputable && item.progress(e.loaded / e.total, `${Math.round((100 * e.loaded) / e.total)}%`);
    xhr.onload = () => {
      const data = xhr.responseText ? JSON.parse(xhr.responseText) : {};
      if (xhr.status === 201) resolve(data.image);
      else reject(new Error(describe(data.detail) || `upload answered ${xhr.status}`));
    };
    xhr.onerror = () => reject(new Error("network error"));
    const form = new FormData();
    form.append("file", file);
    xhr.send(form);
  });
}

/** A part refused for good (a 4xx other than 429): not tried again. */
class FinalPartError extends Error {}

/**
 * @param {string} url
 * @param {Blob} blob
 */
async function putPart(url, blob) {
  for (let attempt = 1; ; attempt++) {
    try {
      const response = await fetch(url, { method: "PUT", body: blob });
      if (response.ok) return;
      if (response.status < 500 && response.status !== 429) throw new FinalPartError(`part refused: ${response.status}`);
      throw new Error(`part answered ${response.status}`);
    } catch (error) {
      if (error instanceof FinalPartError || attempt >= PART_ATTEMPTS) throw error;
      await sleep(300 * 2 ** attempt);
    }
  }
}

/**
 * @param {File} file
 * @param {UploadItem} item
 * @returns {Promise<UploadedImage>}
 */
async function resumableUpload(file, item) {
  /** @type {{ image: UploadedImage, upload: { part_size: number, part_count: number, urls: { part_number: number, url: string }[] } }} */
  const { image, upload } = await api("/upload", { method: "POST", json: { name: file.name, size: file.size } });
  let sent = 0;
  const queue = [...upload.urls];
  const worker = async () => {
    for (let part = queue.shift(); part; part = queue.shift()) {
      const start = (part.part_number - 1) * upload.part_size;
      const blob = file.slice(start, Math.min(file.size, start + upload.part_size));
      await putPart(part.url, blob);
      sent += blob.size;
      item.progress(sent / file.size, `${Math.round((100 * sent) / file.size)}% · part ${part.part_number}/${upload.part_count}`);
    }
  };
  try {
    await Promise.all(Array.from({ length: PARALLEL_PARTS }, worker));
  } catch (error) {
    await api(`/upload/${image.id}/abort`, { method: "POST" }).catch(() => undefined);
    throw error;
  }
  await api(`/upload/${image.id}/complete`, { method: "POST" });
  item.progress(1, "checking the image…");
  for (;;) {
    /** @type {UploadedImage} */
    const record = await api(`/upload/${image.id}`);
    if (record.upload_status === "ready") return record;
    if (record.upload_status === "failed") throw new Error(record.upload_error || "the image could not be read");
    await sleep(700);
  }
}

function setUpUploads() {
  const zone = document.getElementById("dropzone");
  if (!zone) return;
  const input = byId("file-input", HTMLInputElement);
  // The list is rendered by the server: reload it once every upload in flight has finished.
  let inFlight = 0;
  let anyDone = false;
  /** @param {FileList | null | undefined} files */
  const start = (files) => {
    for (const file of files ?? []) {
      const item = uploadItem(file);
      inFlight++;
      (file.size > RESUMABLE_FROM ? resumableUpload(file, item) : streamUpload(file, item))
        .then(
          async (image) => {
            item.done(`ready · ${image.width} × ${image.height}`);
            anyDone = true;
            // The preview is made now, so the image can be looked at before it is segmented; a
            // failure here costs only the picture (the image page asks again and says why).
            await api(`/images/${image.id}/preview`, { method: "POST" }).catch(() => undefined);
          },
          (error) => item.fail(messageOf(error)),
        )
        .finally(() => {
          if (--inFlight === 0 && anyDone) setTimeout(() => location.reload(), 800);
        });
    }
  };
  byId("choose-files").addEventListener("click", () => input.click());
  input.addEventListener("change", () => start(input.files));
  zone.addEventListener("dragover", (e) => {
    e.preventDefault();
    zone.classList.add("over");
  });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", (e) => {
    e.preventDefault();
    zone.classList.remove("over");
    start(e.dataTransfer?.files);
  });
}

function setUpImageDeletes() {
  document.addEventListener("click", async (event) => {
    const button = targetOf(event)?.closest("[data-delete-image]");
    if (!(button instanceof HTMLButtonElement)) return;
    if (!confirm(`Delete "${button.dataset.name}" with its segmentations? This cannot be undone.`)) return;
    button.disabled = true;
    try {
      await api(`/image/${button.dataset.deleteImage}`, { method: "DELETE" });
      location.reload();
    } catch (error) {
      button.disabled = false;
      alert(`Could not delete: ${messageOf(error)}`);
    }
  });
}

// ---- Predictions -------------------------------------------------------------------------------
/** A prediction as /predict/{id} gives it. */
/**
 * @typedef {object} Prediction
 * @property {string} prediction_id
 * @property {string} status SUBMITTED, STARTED, COMPLETED or FAILED
 * @property {string} model_id
 * @property {number} progress 0 to 1
 * @property {string | null} [stage]
 * @property {{ total: number, done: number, glass: number } | null} [blocks] a whole slide's blocks: all, done, and how many of those were glass
 * @property {string | null} [reason]
 * @property {number | null} [cell_count]
 * @property {string | null} [segmentation_id]
 * @property {string} [created_at]
 */

/** @param {HTMLFormElement} form */
function predictionParams(form) {
  /** @type {Record<string, unknown>} */
  const params = {};
  for (const name of ["diameter", "cellprob_threshold", "flow_threshold", "min_size", "pixel_size_um"]) {
    const input = field(form, name, HTMLInputElement);
    if (input.value !== "") params[name] = Number(input.value);
  }
  const modality = field(form, "modality", HTMLSelectElement).value;
  if (modality) params.modality = modality;
  const channel = field(form, "channel", HTMLInputElement).value;
  if (channel !== "") params.channels = [Number(channel), 0];
  return params;
}

/**
 * A row's cell of `selector`; throws when the row has none.
 * @param {HTMLElement} row
 * @param {string} selector
 */
const cellOf = (row, selector) => find(row, selector, HTMLElement);

/**
 * @param {HTMLElement} row
 * @param {Prediction} p
 */
function renderPrediction(row, p) {
  row.dataset.status = p.status;
  cellOf(row, ".status").replaceChildren(el("span", { class: `badge ${p.status.toLowerCase()}` }, p.status.toLowerCase()));
  cellOf(row, ".progress .bar > div").style.width = `${(p.progress * 100).toFixed(0)}%`;
  cellOf(row, ".progress .stage").textContent = predictionStage(p);
  cellOf(row, ".cells").textContent = p.cell_count === null || p.cell_count === undefined ? "—" : String(p.cell_count);
  if (p.segmentation_id && !row.querySelector(".actions a")) {
    cellOf(row, ".actions").append(el("a", { class: "button small", href: `/dashboard/segmentations/${p.segmentation_id}` }, "View cells"));
  }
}

/** @param {Prediction} p */
function predictionRow(p) {
  const row = el(
    "tr",
    { "data-prediction-id": p.prediction_id },
    el("td", {}, fmtDate(p.created_at ?? new Date().toISOString())),
    el("td", { class: "model" }, p.model_id),
    el("td", { class: "status" }),
    el("td", { class: "progress" }, el("div", { class: "bar" }, el("div", { "data-fraction": "0" })), el("span", { class: "stage muted" })),
    el("td", { class: "cells" }),
    el("td", { class: "actions" }),
  );
  renderPrediction(row, p);
  return row;
}

/**
 * The rows of `selector` whose job is still queued or running.
 * @param {string} selector
 */
const activeRows = (selector) =>
  [...document.querySelectorAll(selector)].filter(
    /** @returns {row is HTMLElement} */ (row) => row instanceof HTMLElement && ["SUBMITTED", "STARTED"].includes(row.dataset.status ?? ""),
  );

async function watchPredictions() {
  for (;;) {
    for (const row of activeRows("#predictions tr[data-prediction-id]")) {
      try {
        renderPrediction(row, await api(`/predict/${row.dataset.predictionId}`));
      } catch {
        // A transient error: the next round asks again.
      }
    }
    await sleep(1000);
  }
}

function setUpPredictions() {
  const form = document.getElementById("predict-form");
  if (!(form instanceof HTMLFormElement)) return;
  const error = byId("predict-error");
  showMaskDefaults(form);
  field(form, "model_id", HTMLSelectElement).addEventListener("change", () => showMaskDefaults(form));
  field(form, "modality", HTMLSelectElement).addEventListener("change", () => showMaskDefaults(form));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    error.textContent = "";
    const button = find(form, "button[type=submit]", HTMLButtonElement);
    button.disabled = true;
    try {
      /** @type {{ prediction_id: string }} */
      const submitted = await api("/predict", {
        method: "POST",
        json: { image_id: form.dataset.imageId, model_id: field(form, "model_id", HTMLSelectElement).value, params: predictionParams(form) },
      });
      const tbody = find(document, "#predictions tbody", HTMLTableSectionElement);
      tbody.querySelector(".empty-row")?.remove();
      /** @type {Prediction} */
      const prediction = await api(`/predict/${submitted.prediction_id}`);
      const existing = tbody.querySelector(`tr[data-prediction-id="${prediction.prediction_id}"]`);
      if (existing instanceof HTMLElement) renderPrediction(existing, prediction);
      else tbody.prepend(predictionRow(prediction));
    } catch (e) {
      error.textContent = messageOf(e);
    } finally {
      button.disabled = false;
    }
  });
  watchPredictions();
}

/**
 * Shows, as each mask field's placeholder, the value a blank field gets: the chosen model's default
 * for the chosen modality ("auto": the one detected on this image before, else each modality's).
 * The defaults come from the server (data-mask-defaults); blank fields are still left to the model.
 * @param {HTMLFormElement} form
 */
function showMaskDefaults(form) {
  const option = field(form, "model_id", HTMLSelectElement).selectedOptions[0];
  const note = byId("predict-defaults");
  if (!option) return;
  /** @type {Record<string, Record<string, number>>} modality -> the model's mask defaults for it */
  const byModality = JSON.parse(option.dataset.maskDefaults ?? "{}");
  const modality = field(form, "modality", HTMLSelectElement).value || form.dataset.detectedModality;
  const fields = { cellprob_threshold: "cellprobThreshold", flow_threshold: "flowThreshold", min_size: "minSize" };
  const modalities = Object.keys(byModality);
  for (const [name, key] of Object.entries(fields)) {
    const values = modalities.map((m) => byModality[m]?.[key]);
    field(form, name, HTMLInputElement).placeholder = modality
      ? String(byModality[modality]?.[key])
      : new Set(values).size === 1
        ? String(values[0])
        : values.join(" / ");
  }
  const model = option.textContent;
  if (!modality) note.textContent = `Blank fields take ${model}'s defaults for the modality detected when it runs (${modalities.join(" / ")}).`;
  else if (field(form, "modality", HTMLSelectElement).value) note.textContent = `Blank fields take ${model}'s defaults for ${modality}.`;
  else note.textContent = `Blank fields take ${model}'s defaults for ${modality}, the modality detected on this image before.`;
}

// ---- Trainings ---------------------------------------------------------------------------------
/** A training job as /job/{id} gives it. */
/**
 * @typedef {object} TrainingJob
 * @property {string} job_id
 * @property {string} status SUBMITTED, STARTED, COMPLETED or FAILED
 * @property {string} model_id
 * @property {string[]} image_ids
 * @property {number} progress 0 to 1
 * @property {string | null} [stage]
 * @property {string | null} [reason]
 * @property {string | null} [result_model_id]
 * @property {string} [created_at]
 */

/**
 * A running training's outcome cell: its failure's reason, or nothing while the progress column
 * says what it is doing. A completed one's words come from the server (refreshFromServer), so the
 * page says what the models page and the client say (schema/training-outcome.ts), in one place.
 * @param {TrainingJob} job
 */
function trainingOutcome(job) {
  if (job.status === "FAILED") return job.reason ?? "failed";
  if (job.status !== "COMPLETED") return "";
  return "done";
}

/**
 * Shows a training that just completed without a reload: the models page as the server renders it
 * now gives the list of the organization's models (the new one in it) and the training's outcome.
 * @param {HTMLElement} row
 */
async function refreshFromServer(row) {
  try {
    const response = await fetch("/dashboard/models", { credentials: "same-origin" });
    if (!response.ok) return;
    const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
    const models = fresh.getElementById("own-models");
    if (models) document.getElementById("own-models")?.replaceWith(models);
    const result = fresh.querySelector(`#trainings tr[data-job-id="${CSS.escape(row.dataset.jobId ?? "")}"] .result`);
    if (result) cellOf(row, ".result").replaceChildren(...result.childNodes);
  } catch {
    // The row keeps "done" and its link: a reload shows the rest.
  }
}

/**
 * @param {HTMLElement} row
 * @param {TrainingJob} job
 */
async function renderTraining(row, job) {
  const wasActive = ["SUBMITTED", "STARTED"].includes(row.dataset.status ?? "");
  row.dataset.status = job.status;
  cellOf(row, ".status").replaceChildren(el("span", { class: `badge ${job.status.toLowerCase()}` }, job.status.toLowerCase()));
  cellOf(row, ".progress .bar > div").style.width = `${(job.progress * 100).toFixed(0)}%`;
  cellOf(row, ".progress .stage").textContent = ["SUBMITTED", "STARTED"].includes(job.status) ? (job.stage ?? "") : "";
  cellOf(row, ".result").textContent = trainingOutcome(job);
  if (wasActive && job.status === "COMPLETED" && job.result_model_id) {
    await refreshFromServer(row);
    cellOf(row, ".result").append(" · ", el("a", { href: "/dashboard/models", "data-new-model": job.result_model_id }, "see the new model"));
  }
}

/** @param {TrainingJob} job */
function trainingRow(job) {
  const row = el(
    "tr",
    { "data-job-id": job.job_id, "data-status": "SUBMITTED" },
    el("td", {}, fmtDate(job.created_at)),
    el("td", { class: "model" }, job.model_id),
    el("td", {}, String(job.image_ids.length)),
    el("td", { class: "status" }),
    el("td", { class: "progress" }, el("div", { class: "bar" }, el("div", { "data-fraction": "0" })), el("span", { class: "stage muted" })),
    el("td", { class: "result" }),
  );
  renderTraining(row, job);
  return row;
}

async function watchTrainings() {
  for (;;) {
    for (const row of activeRows("#trainings tr[data-job-id]")) {
      try {
        await renderTraining(row, await api(`/job/${row.dataset.jobId}`));
      } catch {
        // A transient error: the next round asks again.
      }
    }
    await sleep(1500);
  }
}

function setUpTrainings() {
  if (!document.getElementById("trainings")) return;
  watchTrainings();
  const form = document.getElementById("training-form");
  if (!(form instanceof HTMLFormElement)) return;
  const error = byId("training-error");
  /** The image boxes ticked. */
  const chosen = () => [...form.querySelectorAll("input[name=image_id]:checked")].filter((box) => box instanceof HTMLInputElement);
  // A training on nothing but the model's own predictions can only learn what the model already does.
  const warning = byId("training-warning");
  const warn = () => {
    const boxes = chosen();
    warning.hidden = boxes.length === 0 || boxes.some((box) => box.dataset.source === "import");
  };
  form.addEventListener("change", warn);
  form.addEventListener("reset", () => setTimeout(warn));
  warn();
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    error.textContent = "";
    const imageIds = chosen().map((box) => box.value);
    if (imageIds.length === 0) {
      error.textContent = "Select at least one image to learn from.";
      return;
    }
    /** @type {{ model_id: string, image_ids: string[], name?: string, steps?: number }} */
    const body = { model_id: field(form, "model_id", HTMLSelectElement).value, image_ids: imageIds };
    const name = field(form, "name", HTMLInputElement).value.trim();
    if (name) body.name = name;
    const steps = field(form, "steps", HTMLInputElement).value;
    if (steps !== "") body.steps = Number(steps);
    const button = find(form, "button[type=submit]", HTMLButtonElement);
    button.disabled = true;
    try {
      /** @type {{ job_id: string }} */
      const submitted = await api("/job/training", { method: "POST", json: body });
      /** @type {TrainingJob} */
      const job = await api(`/job/${submitted.job_id}`);
      const tbody = find(document, "#trainings tbody", HTMLTableSectionElement);
      tbody.querySelector(".empty-row")?.remove();
      tbody.querySelector(`tr[data-job-id="${job.job_id}"]`)?.remove();
      tbody.prepend(trainingRow(job));
      form.reset();
    } catch (e) {
      error.textContent = messageOf(e);
    } finally {
      button.disabled = false;
    }
  });
}

// ---- Progress bars ----------------------------------------------------------------------------
// The server renders each fill's width as data-fraction: the Content-Security-Policy refuses style
// attributes in markup, while widths set from a script (the CSS object model) are allowed.
function drawBars() {
  for (const fill of document.querySelectorAll(".bar > [data-fraction]")) {
    if (fill instanceof HTMLElement) fill.style.width = `${(Number(fill.dataset.fraction) * 100).toFixed(1)}%`;
  }
}

// ---- Organization switcher (a member of several organizations) -------------------------------
function setUpOrganizationSwitcher() {
  const select = document.querySelector(".org-switcher select");
  if (select instanceof HTMLSelectElement) select.addEventListener("change", () => select.form?.requestSubmit());
}

drawBars();
setUpOrganizationSwitcher();
setUpKeys();
setUpSessions();
setUpUploads();
setUpImageDeletes();
setUpPredictions();
setUpTrainings();
// Marks the page interactive (its handlers are attached); the browser tests wait for it.
document.documentElement.dataset.ready = "true";
