// Bounds on what an annotation import may make the worker do. Files are untrusted: every count is
// checked before the memory it implies is allocated. Documented in worker/annotations/README.md.

// Memory inside the worker's 128 MB, at the bounds: the file (40 MiB), one 32-bit label per pixel
// (24 MB), and the engine's one-piece and hole passes and the outlines' search for holes (one at a
// time), which take up to 8, 5 and 8 bytes per pixel of one object's bounding box (48 MB for an
// object as large as the image); ROIs of 100,000 cells take about 30 MB but leave no room for such
// a giant object's passes.

/** Largest annotation file accepted, in bytes: our own rois.zip of 100,000 cells (36 MB) fits. */
export const MAX_IMPORT_FILE_BYTES = 40 * 1024 * 1024;
/** Largest image (width x height) an annotation can be imported for: 2560 x 2160 sCMOS frames and 2048 x 2048 fit. */
export const MAX_IMPORT_PIXELS = 6_000_000;
/** Most objects one import may hold (the same order as the largest model segmentations). */
export const MAX_IMPORT_OBJECTS = 100_000;
/** Most outline vertices in one file, all objects together, and in one object. */
export const MAX_IMPORT_VERTICES = 5_000_000;
export const MAX_IMPORT_VERTICES_PER_OBJECT = 100_000;
/**
 * Vertices may lie outside the image (the part inside is kept) but not absurdly far: at most one
 * image width (height) beyond either edge.
 */
export const IMPORT_COORDINATE_MARGIN = 1;
/** ZIP archives: most entries, and most bytes any entry or all entries together may inflate to. */
export const MAX_ARCHIVE_ENTRIES = MAX_IMPORT_OBJECTS + 1_000;
export const MAX_ROI_FILE_BYTES = 2 * 1024 * 1024;
export const MAX_ARCHIVE_INFLATED_BYTES = 64 * 1024 * 1024;
/** GeoJSON: deepest array/object nesting accepted (a MultiPolygon's coordinates sit at depth 7). */
export const MAX_GEOJSON_DEPTH = 32;
