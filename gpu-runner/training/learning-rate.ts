// Linear warm-up, then cosine decay to a floor. Cellpose warms up linearly too (its train.py);
// the cosine tail replaces its step-wise halving so any step budget ends on a low rate.
export interface LearningRateSchedule {
  peak: number;
  warmupSteps: number;
  totalSteps: number;
  /** Rate at totalSteps, as a fraction of the peak. */
  finalFraction: number;
}

/** Rate for a 1-based step. */
export function learningRateAt(schedule: LearningRateSchedule, step: number): number {
  const { peak, warmupSteps, totalSteps, finalFraction } = schedule;
  if (step <= warmupSteps) return (peak * step) / warmupSteps;
  const progress = Math.min(1, (step - warmupSteps) / Math.max(1, totalSteps - warmupSteps));
  return peak * (finalFraction + (1 - finalFraction) * 0.5 * (1 + Math.cos(Math.PI * progress)));
}
