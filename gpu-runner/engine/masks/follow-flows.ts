// Euler integration of pixels along the predicted flow field, after Cellpose's
// dynamics.steps_interp (Stringer et al. 2021). Cellpose samples the flows with torch grid_sample
// (bilinear, zeros outside, align_corners=False) at positions normalised by (L - 1); in pixel
// units that samples the field at p·L/(L-1) − 0.5 rather than at p. The same sampling is used
// here so the end points, and hence the masks, match Cellpose's.

/**
 * Moves every foreground pixel `iterations` steps along `flows` (planar [2, H, W] = dY, dX, already
 * masked to the foreground and divided by the flow scale) and returns the flat index of the pixel
 * each one ends in (positions truncated, as Cellpose's .int()).
 */
export function followFlows(flows: Float32Array, width: number, height: number, foreground: Int32Array, iterations: number): Int32Array {
  const ends = new Int32Array(foreground.length);
  const dyField = flows.subarray(0, width * height);
  const dxField = flows.subarray(width * height);
  const lanes = new TrajectoryLanes();
  for (let first = 0; first < foreground.length; first += LANES) {
    const count = Math.min(LANES, foreground.length - first);
    for (let l = 0; l < count; l++) {
      const start = foreground[first + l]!;
      const y = Math.floor(start / width);
      lanes.start(l, y, start - y * width);
    }
    traceLanes(dyField, dxField, width, height, lanes, count, iterations);
    for (let l = 0; l < count; l++) ends[first + l] = (lanes.y[l]! | 0) * width + (lanes.x[l]! | 0);
  }
  return ends;
}

// Each step of a trajectory depends on the previous one (load, interpolate, move), so a single
// trajectory is latency-bound; advancing several independent trajectories in lockstep lets the
// CPU overlap them (about 2-3x faster here).
const LANES = 8;

/**
 * A trajectory that comes back to where it was two steps before (within CYCLE_TOLERANCE px) has
 * settled: it rests at a fixed point or alternates across a sink, the usual ending. Its remaining
 * steps only repeat the cycle, so the end position follows from the parity of the steps left and
 * the rest of the integration is skipped. The result differs from running every step only if the
 * cycle drifts by more than the tolerance, or ends within that distance of a pixel edge.
 */
const CYCLE_TOLERANCE = 1e-6;

class TrajectoryLanes {
  readonly y = new Float64Array(LANES);
  readonly x = new Float64Array(LANES);
  readonly previousY = new Float64Array(LANES);
  readonly previousX = new Float64Array(LANES);
  readonly settled = new Uint8Array(LANES);

  start(lane: number, y: number, x: number): void {
    this.y[lane] = y;
    this.x[lane] = x;
    this.previousY[lane] = NaN;
    this.previousX[lane] = NaN;
    this.settled[lane] = 0;
  }
}

function traceLanes(dyField: Float32Array, dxField: Float32Array, width: number, height: number, lanes: TrajectoryLanes, count: number, iterations: number): void {
  const scaleY = height > 1 ? height / (height - 1) : 1;
  const scaleX = width > 1 ? width / (width - 1) : 1;
  const maxY = height - 1, maxX = width - 1;
  const { y: py, x: px, previousY, previousX, settled } = lanes;
  let moving = count;
  for (let step = 0; step < iterations && moving > 0; step++) {
    for (let l = 0; l < count; l++) {
      if (settled[l]) continue;
      const y = py[l]!, x = px[l]!;
      const sy = y * scaleY - 0.5;
      const sx = x * scaleX - 0.5;
      // Positions are >= 0, so samples are >= -0.5 and (s + 1 | 0) - 1 is floor(s).
      const y0 = ((sy + 1) | 0) - 1, x0 = ((sx + 1) | 0) - 1;
      const fy = sy - y0, fx = sx - x0;
      let dy: number, dx: number;
      if (y0 >= 0 && x0 >= 0 && y0 < maxY && x0 < maxX) {
        const i = y0 * width + x0;
        const j = i + width;
        const gx = 1 - fx;
        dy = (1 - fy) * (gx * dyField[i]! + fx * dyField[i + 1]!) + fy * (gx * dyField[j]! + fx * dyField[j + 1]!);
        dx = (1 - fy) * (gx * dxField[i]! + fx * dxField[i + 1]!) + fy * (gx * dxField[j]! + fx * dxField[j + 1]!);
      } else {
        // Bilinear sample with zero padding: corners outside the image contribute nothing.
        dy = 0; dx = 0;
        for (let c = 0; c < 4; c++) {
          const yy = y0 + (c >> 1), xx = x0 + (c & 1);
          if (yy < 0 || xx < 0 || yy > maxY || xx > maxX) continue;
          const weight = (c >> 1 ? fy : 1 - fy) * (c & 1 ? fx : 1 - fx);
          dy += weight * dyField[yy * width + xx]!;
          dx += weight * dxField[yy * width + xx]!;
        }
      }
      let ny = y + dy, nx = x + dx;
      ny = ny < 0 ? 0 : ny > maxY ? maxY : ny;
      nx = nx < 0 ? 0 : nx > maxX ? maxX : nx;
      if (Math.abs(ny - previousY[l]!) < CYCLE_TOLERANCE && Math.abs(nx - previousX[l]!) < CYCLE_TOLERANCE) {
        // Period 1 or 2: after an odd number of further steps the point is where it is now (y, x).
        const remaining = iterations - step - 1;
        if (remaining % 2 === 1) { ny = y; nx = x; }
        settled[l] = 1;
        moving--;
      }
      previousY[l] = y;
      previousX[l] = x;
      py[l] = ny;
      px[l] = nx;
    }
  }
}
