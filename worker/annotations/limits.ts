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
/**
 * Work, whatever the counts above allow (a file within them could still ask for hours of CPU):
 * - Filling outlines crosses each pixel row once per edge that spans it. Outlines drawn at the
 *   image's resolution cross a row a few times per object, so all objects together may cross the
 *   image's rows at most 4 times per image pixel (and 65,536 times on any image): one comb
 *   polygon of 100,000 teeth would cross each row of its image 100,000 times.
 * - Filling an object, and the one-piece and hole passes after it, each visit every pixel of the
 *   object's bounding box (inside the image), and objects may overlap: all boxes together may cover
 *   at most 2^27 pixels, counting overlaps (22 times the largest image; the passes take about 4 ns
 *   a pixel on a shared 2-core machine, so about half a second at the limit). Compact cells cover
 *   their image about twice at most; 100,000 copies of the whole image, or 65,535 labels each on
 *   two pixels at opposite edges, cover it tens of thousands of times.
 * Both are counted before the work they measure (an object's before it is drawn, a label image's
 * before the passes) and refused with "limit_exceeded".
 */
const MAX_IMPORT_CROSSINGS_PER_PIXEL = 4;
/**
 * Training on an import makes each object's flow targets by heat diffusion: its area times its
 * steps (twice its box's extent; schema/work-limits.ts, diffusionWork). Compact cells covering the
 * largest image cost about 5e8 pixel-steps; one object filling it, 6e10, about two and a half
 * minutes of a runner's thread (2.5 ns a pixel-step). The limit, 1e10, keeps any import's
 * preparation under about half a minute and admits a gland of 1000 px across (3e9).
 */
export const MAX_IMPORT_DIFFUSION_WORK = 1e10;
const MIN_IMPORT_CROSSINGS = 65_536;
export const MAX_IMPORT_BOX_PIXELS = 2 ** 27;

/** Row crossings allowed for an image of `pixels` pixels. */
export function maxImportCrossings(pixels: number): number {
  return Math.max(MIN_IMPORT_CROSSINGS, MAX_IMPORT_CROSSINGS_PER_PIXEL * pixels);
}

/** GeoJSON: deepest array/object nesting accepted (a MultiPolygon's coordinates sit at depth 7). */
export const MAX_GEOJSON_DEPTH = 32;
