// A file written in order through a buffer of about a megabyte: the CLI's outputs of a whole slide
// (hundreds of thousands of cells) go to disk as they are made instead of as one string.
import { open } from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";

const FLUSH_BYTES = 1 << 20;

export class BufferedFile {
  private readonly handle: FileHandle;
  private parts: (string | Uint8Array)[] = [];
  private pending = 0;

  private constructor(handle: FileHandle) {
    this.handle = handle;
  }

  static async create(path: string): Promise<BufferedFile> {
    return new BufferedFile(await open(path, "w"));
  }

  async write(part: string | Uint8Array): Promise<void> {
    this.parts.push(part);
    this.pending += part.length;
    if (this.pending >= FLUSH_BYTES) await this.flush();
  }

  async close(): Promise<void> {
    await this.flush();
    await this.handle.close();
  }

  private async flush(): Promise<void> {
    const parts = this.parts;
    this.parts = [];
    this.pending = 0;
    for (const part of parts) await this.handle.write(typeof part === "string" ? Buffer.from(part) : part);
  }
}
