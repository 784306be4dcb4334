// Reading test streams back into bytes and text.

export function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

export async function readAllBytes(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const chunk of stream) parts.push(chunk);
  return concatBytes(parts);
}

export async function readAllText(stream: ReadableStream<Uint8Array>): Promise<string> {
  return new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(await readAllBytes(stream));
}

/** A stream that yields `bytes` in pieces of `size`, as a network read would. */
export function streamInPieces(bytes: Uint8Array, size: number): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (at >= bytes.length) {
        controller.close();
        return;
      }
      controller.enqueue(bytes.slice(at, at + size));
      at += size;
    },
  });
}
