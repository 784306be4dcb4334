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
