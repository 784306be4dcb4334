// TIFF decoding into the engine's planar float image: 8/16/32-bit integer and 32/64-bit float
// samples, uncompressed/LZW/Deflate/PackBits, strips or tiles, chunky or planar, multi-page,
// OME-TIFF and ImageJ hyperstacks (see tiff-hyperstack.ts), classic TIFF and BigTIFF.
import {
  checkDimensions,
  ImageDecodeError,
  selectChannels,
  type DecodedImage,
  type DecodeOptions,
  type ImageProbe,
  type SampleFormat,
} from "./decoded-image.ts";
import { decompress } from "./tiff-codecs.ts";
import { numberOf, numbersOf, readTiffFile, stringOf, Tag, type TiffDirectory, type TiffFile } from "./tiff-directory.ts";
import { pageLayout, type PageLayout } from "./tiff-hyperstack.ts";
import { undoPredictor } from "./tiff-predictor.ts";

interface PageInfo {
  width: number;
  height: number;
  samplesPerPixel: number;
  bitsPerSample: number;
  sampleFormat: SampleFormat;
  compression: number;
  predictor: number;
  planar: boolean;
  whiteIsZero: boolean;
  tiled: boolean;
  /** Block geometry: strips are blocks as wide as the image. */
  blockWidth: number;
  blockHeight: number;
  offsets: number[];
  byteCounts: number[] | undefined;
}

const SAMPLE_FORMATS: Record<number, SampleFormat> = { 1: "uint", 2: "int", 3: "float" };

function describePage(dir: TiffDirectory, index: number): PageInfo {
  const width = numberOf(dir, Tag.ImageWidth);
  const height = numberOf(dir, Tag.ImageLength);
  const samplesPerPixel = numberOf(dir, Tag.SamplesPerPixel, 1);
  checkDimensions(width, height, samplesPerPixel);
  const bits = numbersOf(dir, Tag.BitsPerSample) ?? [1];
  const bitsPerSample = bits[0]!;
  if (bits.some((b) => b !== bitsPerSample)) throw new ImageDecodeError(`TIFF page ${index}: mixed bits per sample are not supported`);
  const sampleFormat = SAMPLE_FORMATS[numberOf(dir, Tag.SampleFormat, 1)];
  if (!sampleFormat) throw new ImageDecodeError(`TIFF page ${index}: sample format ${numberOf(dir, Tag.SampleFormat)} is not supported`);
  const supported = sampleFormat === "float" ? bitsPerSample === 32 || bitsPerSample === 64 : [8, 16, 32].includes(bitsPerSample);
  if (!supported) throw new ImageDecodeError(`TIFF page ${index}: ${bitsPerSample}-bit ${sampleFormat} samples are not supported`);
  const photometric = numberOf(dir, Tag.Photometric, 1);
  if (photometric === 3) throw new ImageDecodeError(`TIFF page ${index}: palette-colour images are not supported`);
  if (photometric > 2) throw new ImageDecodeError(`TIFF page ${index}: photometric interpretation ${photometric} is not supported`);

  const tiled = dir.tags.has(Tag.TileWidth);
  const blockWidth = tiled ? numberOf(dir, Tag.TileWidth) : width;
  const blockHeight = tiled ? numberOf(dir, Tag.TileLength) : Math.min(numberOf(dir, Tag.RowsPerStrip, height), height);
  if (!(blockWidth >= 1 && blockHeight >= 1)) throw new ImageDecodeError(`TIFF page ${index}: invalid strip or tile size`);
  const offsets = numbersOf(dir, tiled ? Tag.TileOffsets : Tag.StripOffsets);
  if (!offsets) throw new ImageDecodeError(`TIFF page ${index}: no strip or tile offsets`);
  const planar = numberOf(dir, Tag.PlanarConfiguration, 1) === 2 && samplesPerPixel > 1;
  const blocks = Math.ceil(width / blockWidth) * Math.ceil(height / blockHeight) * (planar ? samplesPerPixel : 1);
  if (offsets.length < blocks) throw new ImageDecodeError(`TIFF page ${index}: ${offsets.length} data blocks listed, ${blocks} needed`);
  return {
    width,
    height,
    samplesPerPixel,
    bitsPerSample,
    sampleFormat,
    compression: numberOf(dir, Tag.Compression, 1),
    predictor: numberOf(dir, Tag.Predictor, 1),
    planar,
    whiteIsZero: photometric === 0,
    tiled,
    blockWidth,
    blockHeight,
    offsets,
    byteCounts: numbersOf(dir, tiled ? Tag.TileByteCounts : Tag.StripByteCounts),
  };
}

interface TiffLayout {
  file: TiffFile;
  layout: PageLayout;
  first: PageInfo;
}

function layoutOf(bytes: Uint8Array): TiffLayout {
  const file = readTiffFile(bytes);
  const first = describePage(file.directories[0]!, 0);
  const layout = pageLayout(stringOf(file.directories[0]!, Tag.ImageDescription), file.directories.length, first.samplesPerPixel);
  return { file, layout, first };
}

export function probeTiff(bytes: Uint8Array): ImageProbe {
  const { layout, first } = layoutOf(bytes);
  return {
    format: "tiff",
    width: first.width,
    height: first.height,
    channels: layout.channelPages * first.samplesPerPixel,
    bitDepth: first.bitsPerSample,
    sampleFormat: first.sampleFormat,
    pages: layout.planes,
  };
}

export function decodeTiff(bytes: Uint8Array, options: DecodeOptions = {}): DecodedImage {
  const { file, layout, first } = layoutOf(bytes);
  const plane = options.page ?? 0;
  if (!Number.isInteger(plane) || plane < 0 || plane >= layout.planes) {
    throw new ImageDecodeError(`page ${plane} does not exist (file has ${layout.planes} plane${layout.planes === 1 ? "" : "s"})`);
  }
  // Channels are counted from the first page's samples; a plain stack's planes may differ in size,
  // so the selected page (not page 0) defines the geometry there.
  const geometry = layout.kind === "plain" ? describePage(file.directories[layout.pageOf(plane, 0)]!, plane) : first;
  const spp = geometry.samplesPerPixel;
  const wanted = selectChannels(layout.channelPages * spp, options.channels);
  const { width, height } = geometry;
  checkDimensions(width, height, wanted.length);
  const data = new Float32Array(wanted.length * width * height);

  // Group the wanted channels by page so each page is decompressed once.
  const byPage = new Map<number, { sample: number; target: number }[]>();
  wanted.forEach((channel, target) => {
    const page = layout.pageOf(plane, Math.floor(channel / spp));
    if (page >= file.directories.length) throw new ImageDecodeError(`TIFF page ${page} is missing`);
    const list = byPage.get(page) ?? [];
    list.push({ sample: channel % spp, target });
    byPage.set(page, list);
  });
  for (const [page, samples] of byPage) {
    const info = page === 0 ? first : describePage(file.directories[page]!, page);
    if (info.width !== width || info.height !== height || info.samplesPerPixel !== spp || info.bitsPerSample !== geometry.bitsPerSample) {
      throw new ImageDecodeError(`TIFF page ${page} differs in size or sample layout from the other channels`);
    }
    decodePage(file, info, samples, data);
  }
  return { width, height, channels: wanted.length, bitDepth: geometry.bitsPerSample, sampleFormat: geometry.sampleFormat, data };
}

type SampleReader = (view: DataView, at: number) => number;

function sampleReader(bits: number, format: SampleFormat, le: boolean): SampleReader {
  if (format === "float") return bits === 32 ? (v, at) => v.getFloat32(at, le) : (v, at) => v.getFloat64(at, le);
  if (format === "int") {
    if (bits === 8) return (v, at) => v.getInt8(at);
    return bits === 16 ? (v, at) => v.getInt16(at, le) : (v, at) => v.getInt32(at, le);
  }
  if (bits === 8) return (v, at) => v.getUint8(at);
  return bits === 16 ? (v, at) => v.getUint16(at, le) : (v, at) => v.getUint32(at, le);
}

function decodePage(file: TiffFile, info: PageInfo, samples: { sample: number; target: number }[], out: Float32Array): void {
  const { width, height, blockWidth, blockHeight, samplesPerPixel: spp, planar } = info;
  const bytesPerSample = info.bitsPerSample / 8;
  const across = Math.ceil(width / blockWidth);
  const down = Math.ceil(height / blockHeight);
  const perPlane = across * down;
  const sppInBlock = planar ? 1 : spp;
  const read = sampleReader(info.bitsPerSample, info.sampleFormat, file.littleEndian);
  const whiteLevel = info.whiteIsZero && info.sampleFormat === "uint" ? 2 ** info.bitsPerSample - 1 : -1;
  const planeSize = width * height;

  const sampleGroups = planar ? samples.map((s) => [s]) : [samples];
  for (const group of sampleGroups) {
    const planeOffset = planar ? group[0]!.sample * perPlane : 0;
    for (let by = 0; by < down; by++) {
      for (let bx = 0; bx < across; bx++) {
        const blockIndex = planeOffset + by * across + bx;
        // Strips at the bottom hold only the remaining rows; tiles are always full size.
        const rows = info.tiled ? blockHeight : Math.min(blockHeight, height - by * blockHeight);
        const expected = blockWidth * rows * sppInBlock * bytesPerSample;
        const block = readBlock(file, info, blockIndex, expected);
        undoPredictor(info.predictor, block, blockWidth, rows, sppInBlock, bytesPerSample, file.littleEndian);
        const view = new DataView(block.buffer, block.byteOffset, block.byteLength);
        const x0 = bx * blockWidth;
        const y0 = by * blockHeight;
        const xEnd = Math.min(width, x0 + blockWidth);
        const yEnd = Math.min(height, y0 + rows);
        for (const { sample, target } of group) {
          const sampleIndex = planar ? 0 : sample;
          const base = target * planeSize;
          for (let y = y0; y < yEnd; y++) {
            let at = (((y - y0) * blockWidth) * sppInBlock + sampleIndex) * bytesPerSample;
            const step = sppInBlock * bytesPerSample;
            let o = base + y * width + x0;
            for (let x = x0; x < xEnd; x++, at += step, o++) {
              const value = read(view, at);
              out[o] = whiteLevel >= 0 ? whiteLevel - value : value;
            }
          }
        }
      }
    }
  }
}

function readBlock(file: TiffFile, info: PageInfo, index: number, expected: number): Uint8Array {
  const offset = info.offsets[index]!;
  // Uncompressed files may omit byte counts; the size then follows from the geometry.
  const count = info.byteCounts?.[index] ?? (info.compression === 1 ? expected : NaN);
  if (!Number.isFinite(count)) throw new ImageDecodeError("TIFF is missing strip or tile byte counts");
  if (offset + count > file.bytes.length) {
    throw new ImageDecodeError(`TIFF truncated: data block ${index} (${count} bytes at ${offset}) lies past the end of the file (${file.bytes.length} bytes)`);
  }
  const raw = file.bytes.subarray(offset, offset + count);
  if (info.compression === 1) {
    if (count < expected) throw new ImageDecodeError(`TIFF truncated: data block ${index} has ${count} of ${expected} bytes`);
    // Predictors work in place, so never hand out a view of the caller's bytes.
    return info.predictor === 1 ? raw.subarray(0, expected) : raw.slice(0, expected);
  }
  return decompress(info.compression, raw, expected);
}
