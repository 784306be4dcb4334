// Decoded tiles kept for the next regions: neighbouring regions share edge tiles, a strip spans
// many rows, so a region reader decodes each once while it is in use.

/** Least recently used decoded blocks within a byte budget; the latest block is kept whatever its size. */
export class BlockCache {
  private readonly blocks = new Map<string, Uint8Array>();
  private bytes = 0;
  private budget: number;
  constructor(budget: number) {
    this.budget = budget;
  }
  resize(budget: number): void {
    this.budget = budget;
    this.evict();
  }
  get(key: string): Uint8Array | undefined {
    const block = this.blocks.get(key);
    if (block) {
      this.blocks.delete(key);
      this.blocks.set(key, block);
    }
    return block;
  }
  set(key: string, block: Uint8Array): void {
    const old = this.blocks.get(key);
    if (old) this.bytes -= old.byteLength;
    this.blocks.delete(key);
    this.blocks.set(key, block);
    this.bytes += block.byteLength;
    this.evict();
  }
  private evict(): void {
    while (this.bytes > this.budget && this.blocks.size > 1) {
      const [oldest, evicted] = this.blocks.entries().next().value!;
      this.blocks.delete(oldest);
      this.bytes -= evicted.byteLength;
    }
  }
}
