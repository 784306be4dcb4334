// Which diameter a segmentation ran at, and why: the request's; the size the model learned in µm,
// mapped through the image's pixel size (as QuPath's StarDist and InstanSeg extensions scale an
// image to the pixel size a model was trained at); an estimate from the image; or the model's own.
// A calibrated image is never estimated: the estimate is for images whose pixel size is unknown.
import type { DiameterBasis } from "../../schema/diameter-basis.ts";
import { MAX_AUTO_ENLARGEMENT, MAX_DIAMETER_PX } from "../../schema/work-limits.ts";
import type { Modality } from "./modality.ts";
import type { ModelManifest } from "./model.ts";

export interface KnownPixelSize {
  /** Micrometres per pixel (the mean of x and y). */
  um: number;
  /** Where it comes from, as a person says it: "the file", "the request". */
  from: string;
}

/**
 * The diameter (px) the model's learned object size in µm takes at this pixel size, with the
 * reason; undefined where either is unknown. Held within what "auto" may reach: an enlargement of
 * at most MAX_AUTO_ENLARGEMENT and MAX_DIAMETER_PX.
 */
export function calibratedDiameter(
  manifest: Pick<ModelManifest, "objectDiameterUm" | "diameter">,
  modality: Modality | undefined,
  pixelSize: KnownPixelSize | undefined,
): { diameter: number; basis: DiameterBasis } | undefined {
  const learnedUm = modality ? manifest.objectDiameterUm?.[modality] : undefined;
  if (learnedUm === undefined || !pixelSize) return undefined;
  const diameter = Math.min(MAX_DIAMETER_PX, Math.max(manifest.diameter / MAX_AUTO_ENLARGEMENT, learnedUm / pixelSize.um));
  return {
    diameter,
    basis: {
      source: "calibration",
      reason: `${formatUm(pixelSize.um)} µm/px from ${pixelSize.from}: ${modality} objects of ${formatUm(learnedUm)} µm at ${diameter.toFixed(1)} px`,
    },
  };
}

export function givenBasis(diameter: number): DiameterBasis {
  return { source: "given", reason: `${diameter} px, as requested` };
}

export function estimatedBasis(diameter: number, pixelSizeKnown: boolean): DiameterBasis {
  const why = pixelSizeKnown ? "the model states no object size in µm for this modality" : "the image states no pixel size";
  return { source: "estimated", reason: `estimated at ${diameter.toFixed(1)} px (${why})` };
}

export function modelBasis(diameter: number): DiameterBasis {
  return { source: "model", reason: `the model's own ${diameter} px (no rescaling)` };
}

function formatUm(um: number): string {
  return Number(um.toPrecision(3)).toString();
}
