// A minimal Chrome DevTools protocol client for a Worker isolate under `wrangler dev
// --inspector-port`: bench:exports reads the isolate's V8 heap through it.

export class Inspector {
  private readonly socket: WebSocket;
  private nextId = 1;
  private readonly waiting = new Map<number, (result: Record<string, number>) => void>();

  private constructor(socket: WebSocket) {
    this.socket = socket;
    socket.addEventListener("message", (event) => {
      const message = JSON.parse(String(event.data));
      this.waiting.get(message.id)?.(message.result ?? {});
      this.waiting.delete(message.id);
    });
  }

  /** Connects to the one target wrangler's inspector proxy offers: the Worker's isolate. */
  static async connect(port: number): Promise<Inspector> {
    const targets = (await (await fetch(`http://127.0.0.1:${port}/json`)).json()) as { id: string; webSocketDebuggerUrl?: string }[];
    const [target, ...others] = targets;
    if (target === undefined || others.length > 0) throw new Error(`expected one inspector target on port ${port}, found ${JSON.stringify(targets)}`);
    // The proxy admits DevTools from local origins only, and Node's WebSocket sends none.
    const socket = new WebSocket(target.webSocketDebuggerUrl ?? `ws://127.0.0.1:${port}/ws`, { headers: { Origin: "http://127.0.0.1" } });
    await new Promise((resolve, reject) => {
      socket.addEventListener("open", resolve);
      socket.addEventListener("error", reject);
    });
    return new Inspector(socket);
  }

  send(method: string): Promise<Record<string, number>> {
    const id = this.nextId++;
    this.socket.send(JSON.stringify({ id, method }));
    return new Promise((resolve) => this.waiting.set(id, resolve));
  }

  close(): void {
    this.socket.close();
  }
}
