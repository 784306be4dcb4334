// Retries with exponential backoff and full jitter (each wait uniform in [0, base * 2^attempt],
// capped), so a fleet of runners does not hammer a worker that is coming back in lockstep.

export class TransientError extends Error {}

interface RetryOptions {
  attempts: number;
  baseMs: number;
  maxMs: number;
  /** Stop retrying early, e.g. on shutdown. */
  signal?: AbortSignal;
  onRetry?: (error: unknown, attempt: number, waitMs: number) => void;
}

export const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });

export async function withRetry<T>(operation: () => Promise<T>, options: RetryOptions): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await operation();
    } catch (error) {
      if (!(error instanceof TransientError) || attempt + 1 >= options.attempts || options.signal?.aborted) throw error;
      const waitMs = Math.random() * Math.min(options.maxMs, options.baseMs * 2 ** attempt);
      options.onRetry?.(error, attempt + 1, waitMs);
      await sleep(waitMs, options.signal);
    }
  }
}
