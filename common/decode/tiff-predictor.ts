// Undoes TIFF predictors in place on one decompressed strip or tile: 2 = horizontal differencing
// (TIFF 6.0, section 14), 3 = floating-point predictor (Adobe Photoshop TIFF Technical Note 3:
// bytes of each row split into planes by significance, then byte-wise differencing).
import { ImageDecodeError } from "./decoded-image.ts";

export function undoPredictor(
  predictor: number,
  block: Uint8Array,
  rowWidth: number, // pixels per row of the block
  rows: number,
  samplesPerPixel: number, // interleaved samples per pixel in the block (1 for planar blocks)
  bytesPerSample: number,
  littleEndian: boolean,
): void {
  if (predictor === 1) return;
  const rowBytes = rowWidth * samplesPerPixel * bytesPerSample;
  if (predictor === 2) {
    const view = new DataView(block.buffer, block.byteOffset, block.byteLength);
    const stride = samplesPerPixel;
    const count = rowWidth * samplesPerPixel;
    for (let r = 0; r < rows; r++) {
      const rowStart = r * rowBytes;
      if (rowStart + rowBytes > block.length) return;
      if (bytesPerSample === 1) {
        for (let i = stride; i < count; i++) block[rowStart + i] = (block[rowStart + i]! + block[rowStart + i - stride]!) & 0xff;
      } else if (bytesPerSample === 2) {
        for (let i = stride; i < count; i++) {
          const at = rowStart + 2 * i;
          view.setUint16(at, view.getUint16(at, littleEndian) + view.getUint16(at - 2 * stride, littleEndian), littleEndian);
        }
      } else if (bytesPerSample === 4) {
        for (let i = stride; i < count; i++) {
          const at = rowStart + 4 * i;
          view.setUint32(at, (view.getUint32(at, littleEndian) + view.getUint32(at - 4 * stride, littleEndian)) >>> 0, littleEndian);
        }
      } else {
        throw new ImageDecodeError(`TIFF horizontal predictor on ${8 * bytesPerSample}-bit samples is not supported`);
      }
    }
    return;
  }
  if (predictor === 3) {
    const row = new Uint8Array(rowBytes);
    const count = rowWidth * samplesPerPixel;
    for (let r = 0; r < rows; r++) {
      const rowStart = r * rowBytes;
      if (rowStart + rowBytes > block.length) return;
      for (let i = samplesPerPixel; i < rowBytes; i++) block[rowStart + i] = (block[rowStart + i]! + block[rowStart + i - samplesPerPixel]!) & 0xff;
      // Byte plane b holds byte b (most significant first) of every sample; reassemble in file order.
      for (let i = 0; i < count; i++) {
        for (let b = 0; b < bytesPerSample; b++) {
          const target = littleEndian ? bytesPerSample - 1 - b : b;
          row[i * bytesPerSample + target] = block[rowStart + b * count + i]!;
        }
      }
      block.set(row, rowStart);
    }
    return;
  }
  throw new ImageDecodeError(`TIFF predictor ${predictor} is not supported`);
}
