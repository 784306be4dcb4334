// Why a segmentation ran at its diameter: the runner says, the worker keeps it with the
// segmentation, the API, the client and the dashboard show it.
import { z } from "zod";

export const DIAMETER_SOURCES = ["given", "calibration", "estimated", "model"] as const;

export const diameterBasis = z.object({
  source: z.enum(DIAMETER_SOURCES),
  /** In words, e.g. "0.499 µm/px from the file: histology objects of 5.1 µm at 10.2 px". */
  reason: z.string().max(300),
});
export type DiameterBasis = z.infer<typeof diameterBasis>;
