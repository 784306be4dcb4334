// Turns an async generator of byte chunks into a ReadableStream that runs the generator only when
// the consumer pulls, so an export produces bytes at the pace the client downloads them and holds
// only what one pull needs. Cancelling the response (client gone) stops the generator, whose
// `finally` blocks release the R2 body.

export function pullStream(chunks: AsyncGenerator<Uint8Array, void, undefined>): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        for (;;) {
          const { value, done } = await chunks.next();
          if (done) {
            controller.close();
            return;
          }
          if (value.length > 0) {
            controller.enqueue(value);
            return;
          }
        }
      },
      async cancel() {
        await chunks.return(undefined);
      },
    },
    // One chunk queued at most: the generator resumes when that chunk has been taken.
    { highWaterMark: 1 },
  );
}

/** Collects text into byte chunks of about `target` bytes so the stream does not carry one chunk per ROI. */
export class TextChunker {
  private readonly encoder = new TextEncoder();
  private readonly target: number;
  private parts: string[] = [];
  private size = 0;

  constructor(target = 64 * 1024) {
    this.target = target;
  }

  /** Adds text; returns a chunk when enough has accumulated, otherwise null. */
  push(text: string): Uint8Array | null {
    this.parts.push(text);
    this.size += text.length;
    return this.size >= this.target ? this.flush() : null;
  }

  /** Whatever has accumulated, as bytes (possibly empty). */
  flush(): Uint8Array {
    const bytes = this.encoder.encode(this.parts.join(""));
    this.parts = [];
    this.size = 0;
    return bytes;
  }
}

/** `parts` joined into one array of `total` bytes. */
export function concatBytes(parts: readonly Uint8Array[], total: number): Uint8Array {
  const out = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
