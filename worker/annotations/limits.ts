// Bounds on what an annotation import may make the worker do. Files are untrusted: every count is
// checked before the memory it implies is allocated. Documented in worker/annotations/README.md.

/** Largest annotation file accepted, in bytes (a GeoJSON of ~30,000 QuPath cells, or any label image of an importable size). */
export const MAX_IMPORT_FILE_BYTES = 32 * 1024 * 1024;
/**
 * Largest image an annotation can be imported for (width x height): the import holds one 32-bit
 * label per pixel (64 MiB at this bound) inside the worker's 128 MB.
 */
export const MAX_IMPORT_PIXELS = 4096 * 4096;
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
