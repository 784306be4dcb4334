// cellseg dashboard: API keys, uploads, deletions, predictions and trainings. Plain JS, no build step.
// Every state-changing call sends the session's CSRF token; the session cookie does the rest.
const csrfToken = document.querySelector('meta[name="csrf-token"]')?.content ?? "";

export async function api(path, { method = "GET", json, body } = {}) {
  const headers = { "X-CSRF-Token": csrfToken };
  if (json !== undefined) {
    headers["Content-Type"] = "application/json";
    body = JSON.stringify(json);
  }
  const response = await fetch(`/dashboard/api${path}`, { method, headers, body, credentials: "same-origin" });
  const text = await response.text();
  const data = text ? JSON.parse(text) : null;
  if (!response.ok) throw Object.assign(new Error(describe(data?.detail) || `${response.status} ${response.statusText}`), { status: response.status });
  return data;
}

function describe(detail) {
  if (Array.isArray(detail)) return detail.map((d) => `${d.loc?.slice(1).join(".")}: ${d.msg}`).join("; ");
  return typeof detail === "string" ? detail : "";
}

const el = (tag, attrs = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k.startsWith("data-")) node.setAttribute(k, v);
    else node[k] = v;
  }
  node.append(...children);
  return node;
};

const fmtDate = (iso) => (iso ? `${iso.slice(0, 16).replace("T", " ")} UTC` : "—");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---- API keys ----------------------------------------------------------------------------------
function setUpKeys() {
  const form = document.getElementById("create-key");
  if (!form) return;
  const tbody = document.querySelector("#keys tbody");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const button = form.querySelector("button");
    button.disabled = true;
    try {
      const created = await api("/keys", { method: "POST", json: { name: form.name.value.trim() || undefined } });
      document.getElementById("new-key-value").textContent = created.key;
      document.getElementById("new-key").hidden = false;
      tbody.querySelector(".empty-row")?.remove();
      tbody.prepend(keyRow(created));
      form.reset();
    } catch (error) {
      alert(`Could not create the key: ${error.message}`);
    } finally {
      button.disabled = false;
    }
  });
  document.getElementById("copy-key").addEventListener("click", async (event) => {
    const text = document.getElementById("new-key-value").textContent;
    try {
      await navigator.clipboard.writeText(text);
    } catch {
      const range = document.createRange();
      range.selectNodeContents(document.getElementById("new-key-value"));
      getSelection().removeAllRanges();
      getSelection().addRange(range);
      document.execCommand("copy");
    }
    event.target.textContent = "Copied";
    setTimeout(() => (event.target.textContent = "Copy"), 2000);
  });
  tbody.addEventListener("click", async (event) => {
    const button = event.target.closest("[data-revoke-key]");
    if (!button) return;
    const id = button.dataset.revokeKey;
    if (!confirm(`Revoke the key "${button.dataset.label}"? Programs using it are refused at once. This cannot be undone.`)) return;
    button.disabled = true;
    try {
      const revoked = await api(`/keys/${id}/revoke`, { method: "POST" });
      button.closest("tr").replaceWith(keyRow(revoked));
    } catch (error) {
      button.disabled = false;
      alert(`Could not revoke the key: ${error.message}`);
    }
  });
}

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
    const button = event.target.closest("[data-revoke-session]");
    if (!button) return;
    const current = button.dataset.current === "true";
    const question = current
      ? "Revoke this browser's session? You will be signed out."
      : "Revoke this session? That browser is signed out at its next request.";
    if (!confirm(question)) return;
    button.disabled = true;
    try {
      await api(`/sessions/${button.dataset.revokeSession}/revoke`, { method: "POST" });
      if (current) location.assign("/dashboard/signed-out");
      else button.closest("tr").remove();
    } catch (error) {
      button.disabled = false;
      alert(`Could not revoke the session: ${error.message}`);
    }
  });
}

// ---- Uploads -----------------------------------------------------------------------------------
/** Files above this go through the resumable protocol (parts, each retried), smaller ones stream in one request. */
const RESUMABLE_FROM = 8 * 1024 * 1024;
const PART_ATTEMPTS = 4;
const PARALLEL_PARTS = 3;

function uploadItem(file) {
  const bar = el("div", { class: "bar" }, el("div", { "data-fraction": "0" }));
  const state = el("span", { class: "state" }, "waiting");
  const item = el("li", { "data-upload-name": file.name }, el("span", {}, file.name), bar, state);
  document.getElementById("uploads").append(item);
  return {
    progress(fraction, text) {
      bar.firstChild.style.width = `${(fraction * 100).toFixed(1)}%`;
      state.textContent = text;
    },
    done(text) {
      item.classList.add("done");
      bar.firstChild.style.width = "100%";
      state.textContent = text;
    },
    fail(text) {
      item.classList.add("failed");
      state.textContent = text;
    },
  };
}

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

async function putPart(url, blob) {
  for (let attempt = 1; ; attempt++) {
    try {
      const response = await fetch(url, { method: "PUT", body: blob });
      if (response.ok) return;
      if (response.status < 500 && response.status !== 429) throw Object.assign(new Error(`part refused: ${response.status}`), { final: true });
      throw new Error(`part answered ${response.status}`);
    } catch (error) {
      if (error.final || attempt >= PART_ATTEMPTS) throw error;
      await sleep(300 * 2 ** attempt);
    }
  }
}

async function resumableUpload(file, item) {
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
    const record = await api(`/upload/${image.id}`);
    if (record.upload_status === "ready") return record;
    if (record.upload_status === "failed") throw new Error(record.upload_error || "the image could not be read");
    await sleep(700);
  }
}

function setUpUploads() {
  const zone = document.getElementById("dropzone");
  if (!zone) return;
  const input = document.getElementById("file-input");
  // The list is rendered by the server: reload it once every upload in flight has finished.
  let inFlight = 0;
  let anyDone = false;
  const start = (files) => {
    for (const file of files) {
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
          (error) => item.fail(error.message),
        )
        .finally(() => {
          if (--inFlight === 0 && anyDone) setTimeout(() => location.reload(), 800);
        });
    }
  };
  document.getElementById("choose-files").addEventListener("click", () => input.click());
  input.addEventListener("change", () => start(input.files));
  zone.addEventListener("dragover", (e) => {
    e.preventDefault();
    zone.classList.add("over");
  });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", (e) => {
    e.preventDefault();
    zone.classList.remove("over");
    start(e.dataTransfer.files);
  });
}

function setUpImageDeletes() {
  document.addEventListener("click", async (event) => {
    const button = event.target.closest("[data-delete-image]");
    if (!button) return;
    if (!confirm(`Delete "${button.dataset.name}" with its segmentations? This cannot be undone.`)) return;
    button.disabled = true;
    try {
      await api(`/image/${button.dataset.deleteImage}`, { method: "DELETE" });
      location.reload();
    } catch (error) {
      button.disabled = false;
      alert(`Could not delete: ${error.message}`);
    }
  });
}

// ---- Predictions -------------------------------------------------------------------------------
function predictionParams(form) {
  const params = {};
  for (const name of ["diameter", "cellprob_threshold", "flow_threshold", "min_size", "pixel_size_um"]) {
    if (form[name].value !== "") params[name] = Number(form[name].value);
  }
  if (form.modality.value) params.modality = form.modality.value;
  if (form.channel.value !== "") params.channels = [Number(form.channel.value), 0];
  return params;
}

function renderPrediction(row, p) {
  row.dataset.status = p.status;
  row.querySelector(".status").replaceChildren(el("span", { class: `badge ${p.status.toLowerCase()}` }, p.status.toLowerCase()));
  row.querySelector(".progress .bar > div").style.width = `${(p.progress * 100).toFixed(0)}%`;
  row.querySelector(".progress .stage").textContent = p.status === "FAILED" ? (p.reason ?? "failed") : (p.stage ?? "");
  row.querySelector(".cells").textContent = p.cell_count ?? "—";
  if (p.segmentation_id && !row.querySelector(".actions a")) {
    row.querySelector(".actions").append(el("a", { class: "button small", href: `/dashboard/segmentations/${p.segmentation_id}` }, "View cells"));
  }
}

function predictionRow(p) {
  const row = el(
    "tr",
    { "data-prediction-id": p.prediction_id },
    el("td", {}, fmtDate(p.created_at ?? new Date().toISOString())),
    el("td", {}, p.model_id),
    el("td", { class: "status" }),
    el("td", { class: "progress" }, el("div", { class: "bar" }, el("div", { "data-fraction": "0" })), el("span", { class: "stage muted" })),
    el("td", { class: "cells" }),
    el("td", { class: "actions" }),
  );
  renderPrediction(row, p);
  return row;
}

async function watchPredictions() {
  for (;;) {
    const active = [...document.querySelectorAll("#predictions tr[data-prediction-id]")].filter((r) => ["SUBMITTED", "STARTED"].includes(r.dataset.status));
    for (const row of active) {
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
  if (!form) return;
  const error = document.getElementById("predict-error");
  showMaskDefaults(form);
  form.model_id.addEventListener("change", () => showMaskDefaults(form));
  form.modality.addEventListener("change", () => showMaskDefaults(form));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    error.textContent = "";
    const button = form.querySelector("button[type=submit]");
    button.disabled = true;
    try {
      const submitted = await api("/predict", {
        method: "POST",
        json: { image_id: form.dataset.imageId, model_id: form.model_id.value, params: predictionParams(form) },
      });
      const tbody = document.querySelector("#predictions tbody");
      tbody.querySelector(".empty-row")?.remove();
      const prediction = await api(`/predict/${submitted.prediction_id}`);
      const existing = tbody.querySelector(`tr[data-prediction-id="${prediction.prediction_id}"]`);
      if (existing) renderPrediction(existing, prediction);
      else tbody.prepend(predictionRow(prediction));
    } catch (e) {
      error.textContent = e.message;
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
 */
function showMaskDefaults(form) {
  const option = form.model_id.selectedOptions[0];
  const note = document.getElementById("predict-defaults");
  if (!option) return;
  const byModality = JSON.parse(option.dataset.maskDefaults);
  const modality = form.modality.value || form.dataset.detectedModality;
  const fields = { cellprob_threshold: "cellprobThreshold", flow_threshold: "flowThreshold", min_size: "minSize" };
  const modalities = Object.keys(byModality);
  for (const [name, key] of Object.entries(fields)) {
    const values = modalities.map((m) => byModality[m][key]);
    form.elements[name].placeholder = modality ? String(byModality[modality][key]) : new Set(values).size === 1 ? String(values[0]) : values.join(" / ");
  }
  const model = option.textContent;
  if (!modality) note.textContent = `Blank fields take ${model}'s defaults for the modality detected when it runs (${modalities.join(" / ")}).`;
  else if (form.modality.value) note.textContent = `Blank fields take ${model}'s defaults for ${modality}.`;
  else note.textContent = `Blank fields take ${model}'s defaults for ${modality}, the modality detected on this image before.`;
}

// ---- Trainings ---------------------------------------------------------------------------------
/**
 * A running training's outcome cell: its failure's reason, or nothing while the progress column
 * says what it is doing. A completed one's words come from the server (refreshFromServer), so the
 * page says what the models page and the client say (schema/training-outcome.ts), in one place.
 */
function trainingOutcome(job) {
  if (job.status === "FAILED") return job.reason ?? "failed";
  if (job.status !== "COMPLETED") return "";
  return "done";
}

/**
 * Shows a training that just completed without a reload: the models page as the server renders it
 * now gives the list of the organization's models (the new one in it) and the training's outcome.
 */
async function refreshFromServer(row) {
  try {
    const response = await fetch("/dashboard/models", { credentials: "same-origin" });
    if (!response.ok) return;
    const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
    const models = fresh.getElementById("own-models");
    if (models) document.getElementById("own-models")?.replaceWith(models);
    const result = fresh.querySelector(`#trainings tr[data-job-id="${CSS.escape(row.dataset.jobId)}"] .result`);
    if (result) row.querySelector(".result").replaceChildren(...result.childNodes);
  } catch {
    // The row keeps "done" and its link: a reload shows the rest.
  }
}

async function renderTraining(row, job) {
  const wasActive = ["SUBMITTED", "STARTED"].includes(row.dataset.status);
  row.dataset.status = job.status;
  row.querySelector(".status").replaceChildren(el("span", { class: `badge ${job.status.toLowerCase()}` }, job.status.toLowerCase()));
  row.querySelector(".progress .bar > div").style.width = `${(job.progress * 100).toFixed(0)}%`;
  row.querySelector(".progress .stage").textContent = ["SUBMITTED", "STARTED"].includes(job.status) ? (job.stage ?? "") : "";
  row.querySelector(".result").textContent = trainingOutcome(job);
  if (wasActive && job.status === "COMPLETED" && job.result_model_id) {
    await refreshFromServer(row);
    row.querySelector(".result").append(" · ", el("a", { href: "/dashboard/models", "data-new-model": job.result_model_id }, "see the new model"));
  }
}

function trainingRow(job) {
  const row = el(
    "tr",
    { "data-job-id": job.job_id, "data-status": "SUBMITTED" },
    el("td", {}, fmtDate(job.created_at)),
    el("td", {}, job.model_id),
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
    const active = [...document.querySelectorAll("#trainings tr[data-job-id]")].filter((r) => ["SUBMITTED", "STARTED"].includes(r.dataset.status));
    for (const row of active) {
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
  if (!form) return;
  const error = document.getElementById("training-error");
  // A training on nothing but the model's own predictions can only learn what the model already does.
  const warning = document.getElementById("training-warning");
  const warn = () => {
    const chosen = [...form.querySelectorAll("input[name=image_id]:checked")];
    warning.hidden = chosen.length === 0 || chosen.some((box) => box.dataset.source === "import");
  };
  form.addEventListener("change", warn);
  form.addEventListener("reset", () => setTimeout(warn));
  warn();
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    error.textContent = "";
    const imageIds = [...form.querySelectorAll("input[name=image_id]:checked")].map((box) => box.value);
    if (imageIds.length === 0) {
      error.textContent = "Select at least one image to learn from.";
      return;
    }
    const body = { model_id: form.model_id.value, image_ids: imageIds };
    if (form.name.value.trim()) body.name = form.name.value.trim();
    if (form.steps.value !== "") body.steps = Number(form.steps.value);
    const button = form.querySelector("button[type=submit]");
    button.disabled = true;
    try {
      const submitted = await api("/job/training", { method: "POST", json: body });
      const job = await api(`/job/${submitted.job_id}`);
      const tbody = document.querySelector("#trainings tbody");
      tbody.querySelector(".empty-row")?.remove();
      tbody.querySelector(`tr[data-job-id="${job.job_id}"]`)?.remove();
      tbody.prepend(trainingRow(job));
      form.reset();
    } catch (e) {
      error.textContent = e.message;
    } finally {
      button.disabled = false;
    }
  });
}

// ---- Progress bars ----------------------------------------------------------------------------
// The server renders each fill's width as data-fraction: the Content-Security-Policy refuses style
// attributes in markup, while widths set from a script (the CSS object model) are allowed.
function drawBars() {
  for (const fill of document.querySelectorAll(".bar > [data-fraction]")) fill.style.width = `${(Number(fill.dataset.fraction) * 100).toFixed(1)}%`;
}

// ---- Organization switcher (a member of several organizations) -------------------------------
function setUpOrganizationSwitcher() {
  const select = document.querySelector(".org-switcher select");
  select?.addEventListener("change", () => select.form.requestSubmit());
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
