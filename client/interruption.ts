// Stopping a run cleanly (Ctrl-C): no new step starts, the steps in flight finish and are recorded
// in the resume state. Abandoning a one-call upload half way could leave the service with an image
// the state never heard of (its answer lost), which a rerun would upload a second time.

export class InterruptedError extends Error {
  constructor() {
    super("interrupted");
  }
}

export class Interruption {
  private readonly controller = new AbortController();

  /** Aborted once a stop is asked for: waits between polls end at once. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get requested(): boolean {
    return this.controller.signal.aborted;
  }

  request(): void {
    this.controller.abort();
  }

  /** Called before each new step: throws InterruptedError once a stop was asked for. */
  checkpoint(): void {
    if (this.requested) throw new InterruptedError();
  }
}
