// The training images a run samples crops from, held within a memory budget: an image is prepared
// (decoded, flow targets computed: prepare-image.ts) when a crop is first drawn from it and kept
// while it fits; past the budget the least recently used ones are dropped and prepared again when
// drawn again. So a job of many images needs memory for the budget, not for all of its images.
import { InputError } from "../engine/faults.ts";
import type { PreparedImage } from "./augment.ts";

/** What the trainer draws crops from: the images' ids (for sampling weights) and each image on demand. */
export interface TrainingImages {
  readonly ids: readonly string[];
  get(index: number): PreparedImage | Promise<PreparedImage>;
}

/** Images already prepared and all held (the train CLI's data sets, tests). */
export function preparedInMemory(images: PreparedImage[]): TrainingImages {
  return { ids: images.map((image) => image.id), get: (index) => images[index]! };
}

/** Bytes a prepared image holds: the normalised image's channels and two flow planes (float32), the foreground mask (one byte). */
export function preparedImageBytes(width: number, height: number, channels: number): number {
  return width * height * (channels * 4 + 2 * 4 + 1);
}

const bytesOf = (image: PreparedImage) => image.image.byteLength + image.flows.byteLength + image.foreground.byteLength;
const mebibytes = (bytes: number) => `${Math.ceil(bytes / 2 ** 20)} MiB`;

export interface PreparedImageCacheStats {
  budgetBytes: number;
  /** Bytes of prepared images held now, and the most ever held at once (never above the budget). */
  residentBytes: number;
  peakBytes: number;
  /** Images prepared so far, preparations again after an eviction included. */
  preparations: number;
}

/** An image's width, height and channel count: all that its prepared size depends on. */
interface PreparedSize {
  width: number;
  height: number;
  channels: number;
}

export class PreparedImageCache implements TrainingImages {
  readonly ids: readonly string[];
  private readonly sizes: readonly PreparedSize[];
  private readonly prepare: (index: number) => Promise<PreparedImage>;
  /** Held images by index; a Map iterates in insertion order, so re-inserting on use keeps it least recently used first. */
  private readonly held = new Map<number, PreparedImage>();
  private readonly budgetBytes: number;
  private residentBytes = 0;
  private peakBytes = 0;
  private preparations = 0;

  /**
   * `sizes`: each image's width, height and channels, known before it is prepared, so that room is made
   * before preparing. An image that alone needs more than the budget is refused up front.
   */
  constructor(ids: readonly string[], sizes: readonly PreparedSize[], budgetBytes: number, prepare: (index: number) => Promise<PreparedImage>) {
    if (!(budgetBytes > 0)) throw new Error(`the training memory budget must be positive, got ${budgetBytes}`);
    if (sizes.length !== ids.length) throw new Error(`${ids.length} ids but ${sizes.length} sizes`);
    sizes.forEach(({ width, height, channels }, i) => {
      const needed = preparedImageBytes(width, height, channels);
      if (needed > budgetBytes) {
        throw new InputError(
          `training image ${i + 1} (${width}x${height}) needs ${mebibytes(needed)} prepared for training, more than this runner's training memory budget of ${mebibytes(budgetBytes)} (TRAINING_MEMORY_MB)`,
        );
      }
    });
    this.ids = ids;
    this.sizes = sizes;
    this.budgetBytes = budgetBytes;
    this.prepare = prepare;
  }

  async get(index: number): Promise<PreparedImage> {
    const held = this.held.get(index);
    if (held) {
      this.held.delete(index);
      this.held.set(index, held);
      return held;
    }
    const { width, height, channels } = this.sizes[index]!;
    this.makeRoom(preparedImageBytes(width, height, channels));
    const prepared = await this.prepare(index);
    this.preparations++;
    this.hold(index, prepared);
    return prepared;
  }

  /** Keeps an image prepared elsewhere (while scanning the job's images) if it fits without evicting any. */
  offer(index: number, prepared: PreparedImage): boolean {
    if (this.held.has(index) || this.residentBytes + bytesOf(prepared) > this.budgetBytes) return false;
    this.preparations++;
    this.hold(index, prepared);
    return true;
  }

  stats(): PreparedImageCacheStats {
    return { budgetBytes: this.budgetBytes, residentBytes: this.residentBytes, peakBytes: this.peakBytes, preparations: this.preparations };
  }

  private makeRoom(bytes: number): void {
    for (const [index, image] of this.held) {
      if (this.residentBytes + bytes <= this.budgetBytes) return;
      this.held.delete(index);
      this.residentBytes -= bytesOf(image);
    }
  }

  private hold(index: number, prepared: PreparedImage): void {
    const bytes = bytesOf(prepared);
    // Sizes were checked against the budget when the cache was made; a prepared image of another size is a bug.
    if (this.residentBytes + bytes > this.budgetBytes)
      throw new Error(
        `prepared image ${index} holds ${bytes} bytes, not the ${preparedImageBytes(this.sizes[index]!.width, this.sizes[index]!.height, this.sizes[index]!.channels)} expected`,
      );
    this.held.set(index, prepared);
    this.residentBytes += bytes;
    this.peakBytes = Math.max(this.peakBytes, this.residentBytes);
  }
}
