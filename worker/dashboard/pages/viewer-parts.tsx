// The viewer's parts on the image page and the segmentation viewer (assets/viewer.js finds them by id).
/** The viewer's zoom buttons (assets/viewer.js finds them by id), on the image page and the segmentation viewer. */
export function ZoomControls() {
  return (
    <div class="zoom-row">
      <button type="button" id="zoom-out" title="Zoom out">
        −
      </button>
      <button type="button" id="zoom-fit">
        Fit
      </button>
      <button type="button" id="zoom-in" title="Zoom in">
        +
      </button>
      <span id="zoom-level" class="muted"></span>
    </div>
  );
}

/** What the viewer draws into and says while it loads (assets/viewer.js finds them by id), on the same two pages. */
export function ViewerCanvas() {
  return (
    <>
      <canvas id="viewer-canvas"></canvas>
      <div class="viewer-status" id="viewer-status">
        Loading…
      </div>
      <div class="viewer-hint">Scroll to zoom · drag to pan</div>
    </>
  );
}
