// The client's one rule for numeric flags: a clear usage error naming the flag and what it got.
import { UsageError } from "./connection.ts";

export function positiveNumber(value: string, flag: string, allowZero = false): number {
  const n = Number(value);
  if (value.trim() === "" || !Number.isFinite(n) || n < 0 || (!allowZero && n === 0))
    throw new UsageError(`${flag} must be a ${allowZero ? "non-negative" : "positive"} number, not ${JSON.stringify(value)}`);
  return n;
}

export function positiveInteger(value: string, flag: string): number {
  const n = positiveNumber(value, flag);
  if (!Number.isInteger(n)) throw new UsageError(`${flag} must be a whole number, not ${JSON.stringify(value)}`);
  return n;
}
