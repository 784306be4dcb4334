// The R2 key layout, in one place: the worker's services, the runner's payloads, the storage
// sweeper, the admin scripts and the benchmarks all name objects through these.
//
//   orgs/<org>/images/<image>/original          an uploaded image, as uploaded
//   orgs/<org>/images/<image>/preview.tiles     its dashboard preview (schema/preview-tiles.ts)
//   orgs/<org>/images/<image>/full/             its full-resolution level, written by a fanned-out prediction:
//                                               <core side>/<block>.tiles per block core, manifest.json naming them
//   orgs/<org>/segmentations/<segmentation>/    a segmentation's outputs: rois.bin, rois.index.json once viewed (+ preview.png of old ones);
//                                               an import's measured rois.measured.bin (and its index) replaces its rois.bin
//   models/<model>/<version>/                   a model's files: model.onnx + model.json

export function imageKey(orgId: string, imageId: string): string {
  return `orgs/${orgId}/images/${imageId}/original`;
}

/** The dashboard's preview of an image, a tile archive (schema/preview-tiles.ts) made by a runner. */
export function imagePreviewKey(orgId: string, imageId: string): string {
  return `orgs/${orgId}/images/${imageId}/preview.tiles`;
}

/** An image's full-resolution level (tile packs and manifest): deleting the image sweeps this prefix. */
export function imageFullPrefix(orgId: string, imageId: string): string {
  return `orgs/${orgId}/images/${imageId}/full/`;
}

/**
 * One block core's full-resolution tile pack (a tile archive of one level, factor 1, covering the
 * core), named by the grid's core side as well: the cores follow from the image's size and the core
 * side alone (block-grid.ts), so two predictions with different grids never overwrite each other's
 * packs, and the manifest names the core side of its own.
 */
export function imageFullTilesKey(orgId: string, imageId: string, coreSide: number, blockIndex: number): string {
  return `${imageFullTilesPrefix(orgId, imageId, coreSide)}${blockIndex}.tiles`;
}

/** The packs of one grid (the merge lists them to see that every block wrote its own). */
export function imageFullTilesPrefix(orgId: string, imageId: string, coreSide: number): string {
  return `${imageFullPrefix(orgId, imageId)}${coreSide}/`;
}

/** The full-resolution level's manifest (schema/preview-tiles.ts fullResolutionManifest), written by the merge once every pack is there. */
export function imageFullManifestKey(orgId: string, imageId: string): string {
  return `${imageFullPrefix(orgId, imageId)}manifest.json`;
}

/** Everything a segmentation owns lives under this prefix, so deleting it is one prefix sweep. */
export function segmentationPrefix(orgId: string, segmentationId: string): string {
  return `orgs/${orgId}/segmentations/${segmentationId}/`;
}

/** A segmentation's ROIs (common/roi-artifact/writer.ts), from which every export is made. */
export function artifactKey(orgId: string, segmentationId: string): string {
  return `${segmentationPrefix(orgId, segmentationId)}rois.bin`;
}

/**
 * What one block of a fanned-out prediction wrote for the merge: its kept cells (an ROI artifact of
 * them alone) and its share of the image's preview (preview-reduction.ts). Under the segmentation's
 * prefix, so a failed prediction's sweep or a deletion takes them; the merge removes them once the
 * artifact is written.
 */
export function blockPartKey(orgId: string, segmentationId: string, blockIndex: number, part: "cells" | "preview"): string {
  return `${segmentationPrefix(orgId, segmentationId)}blocks/${blockIndex}.${part}.bin`;
}

export function blockPartsPrefix(orgId: string, segmentationId: string): string {
  return `${segmentationPrefix(orgId, segmentationId)}blocks/`;
}

/**
 * An imported segmentation's artifact once a runner measured its intensities from the image: a new
 * object, so exports reading the import's own artifact meanwhile read it whole.
 */
export function measuredArtifactKey(orgId: string, segmentationId: string): string {
  return `${segmentationPrefix(orgId, segmentationId)}rois.measured.bin`;
}

/**
 * The chunk index (common/roi-artifact/index.ts) of the artifact at `artifactKey`, made when the
 * viewer first asks: named after its artifact, so a measured artifact never meets the index of
 * the one it replaced.
 */
export function artifactIndexKey(artifactKey: string): string {
  return artifactKey.replace(/\.bin$/, ".index.json");
}

/**
 * The one-bitmap preview runners stored beside the ROI artifact before previews became the image's
 * own tile archive (imagePreviewKey); still shown for segmentations made then.
 */
export function legacySegmentationPreviewKey(orgId: string, segmentationId: string): string {
  return `${segmentationPrefix(orgId, segmentationId)}preview.png`;
}

/** The files of a model version, under its prefix (a public model's prefix comes from its database row). */
export const MODEL_FILES = { onnx: "model.onnx", manifest: "model.json" } as const;
export const MODEL_FILE_NAMES = [MODEL_FILES.onnx, MODEL_FILES.manifest] as const;

/** Where a training's model files go: its result model's first (and only) version. */
export function trainedModelPrefix(modelId: string): string {
  return `models/${modelId}/1/`;
}
