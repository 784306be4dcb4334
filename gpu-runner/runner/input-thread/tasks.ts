// What the input thread does with an untrusted input, and how its answers cross back. Shared by
// the thread (input-worker.ts) and its caller (input-thread.ts).
import type { DecodedImage } from "../../../common/decode/index.ts";

export type InputTask =
  /** A whole image file, decoded. */
  | { kind: "decode"; bytes: Uint8Array }
  /** A segmentation's ROI artifact, rasterised into a label image of the given size. */
  | { kind: "labels"; artifact: Uint8Array; width: number; height: number; name: string };

export type InputAnswer =
  | { ok: true; image: DecodedImage }
  | { ok: true; labels: Uint32Array }
  /** `fault` names the error class to recreate on the caller's side ("input" ones fail the job once). */
  | { ok: false; fault: "decode" | "input" | "other"; message: string };
