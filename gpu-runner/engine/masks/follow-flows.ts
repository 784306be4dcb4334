// Euler integration of pixels along the predicted flow field, after Cellpose's
// dynamics.steps_interp (Stringer et al. 2021). Cellpose samples the flows with torch grid_sample
// (bilinear, zeros outside, align_corners=False) at positions normalised by (L - 1); in pixel
// units that samples the field at p·L/(L-1) − 0.5 rather than at p. The same sampling is used
// here so the end points, and hence the masks, match Cellpose's.
//
// Numeric hot loops: every index is bounded by a loop over the array's own length (or width ×
// height, or a row's samples). The `!`s state that bound to noUncheckedIndexedAccess rather
// than check it again in the inner loop.
import { runChunks, sharedInt32 } from "./mask-threads.ts";

/**
 * Moves every foreground pixel `iterations` steps along `flows` (planar [2, H, W] = dY, dX, already
 * masked to the foreground and divided by the flow scale) and returns the flat index of the pixel
 * each one ends in (positions truncated, as Cellpose's .int()). With threads > 1, `flows` and
 * `foreground` must be views on SharedArrayBuffers (mask-threads.ts).
 */
export function followFlows(flows: Float32Array, width: number, height: number, foreground: Int32Array, iterations: number, threads = 1): Int32Array {
  if (threads <= 1) {
    const ends = new Int32Array(foreground.length);
    followFlowsRange(flows, width, height, foreground, iterations, 0, foreground.length, ends);
    return ends;
  }
  const ends = sharedInt32(foreground.length);
  const chunkCount = Math.ceil(foreground.length / FOLLOW_CHUNK);
  runChunks({ kind: "follow", flows, foreground, ends, width, height, iterations, chunkSize: FOLLOW_CHUNK }, chunkCount, threads, (chunk) => {
    followFlowsRange(flows, width, height, foreground, iterations, chunk * FOLLOW_CHUNK, Math.min(foreground.length, (chunk + 1) * FOLLOW_CHUNK), ends);
  });
  return ends;
}

/** Trajectories per chunk handed to a thread: small enough to balance two busy cores, large enough that claiming one is free. */
const FOLLOW_CHUNK = 4096;

/**
 * A trajectory that comes back to where it was two steps before (within CYCLE_TOLERANCE px) has
 * settled: it rests at a fixed point or alternates across a sink, the usual ending. Its remaining
 * steps only repeat the cycle, so the end position follows from the parity of the steps left and
 * the rest of the integration is skipped. The result differs from running every step only if the
 * cycle still drifts and crosses a pixel edge in the steps left (a drift below the tolerance per
 * two steps moves it at most 0.1 px over 200 steps).
 * Measured against running every step (tolerance 0): 1e-6 skipped 59 % of the steps on the ideal
 * flows of bench:engine's 400 discs, 1e-3 skips 84 % (dynamics 2.1x faster); the labels were
 * identical on those flows and on cpsam's outputs for 2 BBBC039, 2 Kromp and 1 DSB2018 image but
 * for 1 pixel of 1.1 million (test/engine/masks.test.ts checks the same on noisy flows).
 */
const CYCLE_TOLERANCE = 1e-3;

/** End pixels of foreground[first..last) into ends[first..last); the unit of work of a thread. */
export function followFlowsRange(
  flows: Float32Array,
  width: number,
  height: number,
  foreground: Int32Array,
  iterations: number,
  first: number,
  last: number,
  ends: Int32Array,
  cycleTolerance = CYCLE_TOLERANCE,
): void {
  const field = new FlowField(flows, width, height);
  for (let n = first; n < last; n += 2) {
    // Neighbours in raster order go together: they sample the same flows and settle about together.
    const second = Math.min(n + 1, last - 1);
    tracePair(field, foreground[n]!, foreground[second]!, iterations, cycleTolerance, ends, n, second);
  }
}

/** The flows with what sampling them needs. */
class FlowField {
  readonly flows: Float32Array;
  readonly width: number;
  readonly height: number;
  readonly flowY: Float32Array;
  readonly flowX: Float32Array;
  /** Position -> grid_sample coordinate: p·L/(L−1) − 0.5. */
  readonly scaleY: number;
  readonly scaleX: number;
  /** Bilinear sample near the border (dY, dX), see sampleWithZeroPadding. */
  readonly sample = new Float64Array(2);

  constructor(flows: Float32Array, width: number, height: number) {
    const plane = width * height;
    this.flows = flows;
    this.width = width;
    this.height = height;
    this.flowY = flows.subarray(0, plane);
    this.flowX = flows.subarray(plane, 2 * plane);
    this.scaleY = height > 1 ? height / (height - 1) : 1;
    this.scaleX = width > 1 ? width / (width - 1) : 1;
  }
}

// Two trajectories (a and b) are integrated side by side, their positions in local variables:
// each step is a chain of dependent operations (load the flows, interpolate, move, compare), and
// two independent chains keep the CPU busy where one leaves it waiting. Measured on bench:engine's
// 400 discs, one thread: 145–155 ms against 190–200 ms for sweeping blocks of 64 trajectories
// step by step with their positions in arrays (the previous design), and 215–240 ms for one
// trajectory at a time; a third lane, or lanes that take up the next trajectory as soon as
// theirs ends (244 ms), add more state than the CPU's registers hold. The two lanes' code is the
// same step, written twice so that V8 keeps both in registers. A trajectory that settles ends its
// lane; the other goes on alone. Ends are written to ends[at] and ends[atSecond] (the same slot
// when a range has an odd count and b repeats a).
// Kept in its own function, called per pair, so V8 optimises it as a whole function rather than
// by on-stack replacement of a loop inside a long-running caller (which it kept discarding).
function tracePair(
  field: FlowField,
  startA: number,
  startB: number,
  iterations: number,
  tolerance: number,
  ends: Int32Array,
  at: number,
  atSecond: number,
): void {
  const { flows, flowY, flowX, width, height, scaleY, scaleX, sample } = field;
  const maxY = height - 1,
    maxX = width - 1;
  let ya = Math.floor(startA / width),
    xa = startA - ya * width,
    previousYa = NaN,
    previousXa = NaN,
    endA = -1;
  let yb = Math.floor(startB / width),
    xb = startB - yb * width,
    previousYb = NaN,
    previousXb = NaN,
    endB = -1;
  for (let step = 0; step < iterations && (endA < 0 || endB < 0); step++) {
    if (endA < 0) {
      const sy = ya * scaleY - 0.5,
        sx = xa * scaleX - 0.5;
      // Positions are >= 0, so samples are >= -0.5 and (s + 1 | 0) - 1 is floor(s).
      const y0 = ((sy + 1) | 0) - 1,
        x0 = ((sx + 1) | 0) - 1;
      const fy = sy - y0,
        fx = sx - x0;
      let dy: number, dx: number;
      if (y0 >= 0 && x0 >= 0 && y0 < maxY && x0 < maxX) {
        const i = y0 * width + x0,
          j = i + width;
        const gx = 1 - fx,
          gy = 1 - fy;
        dy = gy * (gx * flowY[i]! + fx * flowY[i + 1]!) + fy * (gx * flowY[j]! + fx * flowY[j + 1]!);
        dx = gy * (gx * flowX[i]! + fx * flowX[i + 1]!) + fy * (gx * flowX[j]! + fx * flowX[j + 1]!);
      } else {
        sampleWithZeroPadding(flows, width, height, y0, x0, fy, fx, sample);
        dy = sample[0]!;
        dx = sample[1]!;
      }
      let ny = ya + dy,
        nx = xa + dx;
      // Comparisons rather than Math.min, whose NaN and -0 handling costs V8 extra branches; they
      // give the same for every input (NaN stays NaN, -0 stays -0).
      // biome-ignore lint/complexity/useMathMinMax: measured faster, same results (above)
      ny = ny < 0 ? 0 : ny > maxY ? maxY : ny;
      // biome-ignore lint/complexity/useMathMinMax: as above
      nx = nx < 0 ? 0 : nx > maxX ? maxX : nx;
      if (Math.abs(ny - previousYa) < tolerance && Math.abs(nx - previousXa) < tolerance) {
        // Period 1 or 2: after an odd number of further steps the point is where it is now.
        endA = (iterations - step - 1) % 2 === 1 ? (ya | 0) * width + (xa | 0) : (ny | 0) * width + (nx | 0);
      } else {
        previousYa = ya;
        previousXa = xa;
        ya = ny;
        xa = nx;
      }
    }
    if (endB < 0) {
      // The same step as above, for b.
      const sy = yb * scaleY - 0.5,
        sx = xb * scaleX - 0.5;
      const y0 = ((sy + 1) | 0) - 1,
        x0 = ((sx + 1) | 0) - 1;
      const fy = sy - y0,
        fx = sx - x0;
      let dy: number, dx: number;
      if (y0 >= 0 && x0 >= 0 && y0 < maxY && x0 < maxX) {
        const i = y0 * width + x0,
          j = i + width;
        const gx = 1 - fx,
          gy = 1 - fy;
        dy = gy * (gx * flowY[i]! + fx * flowY[i + 1]!) + fy * (gx * flowY[j]! + fx * flowY[j + 1]!);
        dx = gy * (gx * flowX[i]! + fx * flowX[i + 1]!) + fy * (gx * flowX[j]! + fx * flowX[j + 1]!);
      } else {
        sampleWithZeroPadding(flows, width, height, y0, x0, fy, fx, sample);
        dy = sample[0]!;
        dx = sample[1]!;
      }
      let ny = yb + dy,
        nx = xb + dx;
      // biome-ignore lint/complexity/useMathMinMax: as above
      ny = ny < 0 ? 0 : ny > maxY ? maxY : ny;
      // biome-ignore lint/complexity/useMathMinMax: as above
      nx = nx < 0 ? 0 : nx > maxX ? maxX : nx;
      if (Math.abs(ny - previousYb) < tolerance && Math.abs(nx - previousXb) < tolerance) {
        endB = (iterations - step - 1) % 2 === 1 ? (yb | 0) * width + (xb | 0) : (ny | 0) * width + (nx | 0);
      } else {
        previousYb = yb;
        previousXb = xb;
        yb = ny;
        xb = nx;
      }
    }
  }
  // Still moving after the last step: where they are.
  ends[at] = endA >= 0 ? endA : (ya | 0) * width + (xa | 0);
  ends[atSecond] = endB >= 0 ? endB : (yb | 0) * width + (xb | 0);
}

/** Bilinear sample at the image border: corners outside the image contribute nothing (zero padding). */
function sampleWithZeroPadding(flows: Float32Array, width: number, height: number, y0: number, x0: number, fy: number, fx: number, out: Float64Array): void {
  const plane = width * height;
  let dy = 0,
    dx = 0;
  for (let c = 0; c < 4; c++) {
    const yy = y0 + (c >> 1),
      xx = x0 + (c & 1);
    if (yy < 0 || xx < 0 || yy >= height || xx >= width) continue;
    const weight = (c >> 1 ? fy : 1 - fy) * (c & 1 ? fx : 1 - fx);
    dy += weight * flows[yy * width + xx]!;
    dx += weight * flows[plane + yy * width + xx]!;
  }
  out[0] = dy;
  out[1] = dx;
}
