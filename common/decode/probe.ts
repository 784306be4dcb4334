// The one image probe: what an image's headers say (format, size, channels, depth, planes, pixel
// size, channel names), never its pixels, under the rules the decoders apply (schema/image-formats),
// so a file the probe accepts is one the decoders read. Written once, as a parser that yields the
// byte ranges it needs (as tiff-directory.ts is), and run two ways:
// - probeImage: on bytes in memory, synchronously (the engine, the worker's label-image import);
// - probeImageSource: on a ByteSource through ranged reads (the worker's upload probe reads only
//   the header bytes of a stored file of any size, through R2 range reads under a read budget).
import {
  checkImageSize,
  checkRegionImageSize,
  checkTiffBlock,
  trustedCalibration,
  type DicomLevel,
  Compression,
  isJpeg2000Compression,
  ImageDecodeError,
  isJpegFrameMarker,
  isJpegStandaloneMarker,
  JPEG_WORKING_CHANNELS,
  jpegChannels,
  jpegEndsWithEoi,
  jpegFrameFits,
  MAX_JPEG_SEGMENTS_BEFORE_FRAME,
  maxInflatedBytes,
  pngEndsWithIend,
  pngInflatedBytes,
  pngWorkingChannels,
  readPngHeader,
  SNIFF_BYTES,
  sniffImageFormat,
  unsupportedFileMessage,
  Tag,
  tiffCalibration,
  tiffChannelNames,
  tiffMagnification,
  SLIDE_FORMAT_NAMES,
  type PageLayout,
  tiffPageLayout,
} from "../../schema/image-formats/index.ts";
import type { ByteSource } from "./byte-source.ts";
import { readDicomStructure } from "./dicom-structure.ts";
import { readZipImage } from "./zip-image.ts";
import { readSlideFacts, subIfdLevels } from "./tiff-slide.ts";
import { mosaicOfPage } from "./tile-mosaic.ts";
import type { ImageProbe } from "./decoded-image.ts";
import { pageInfo, StoredBytesTally } from "./tiff-blocks.ts";
import { type Parse, parseBytes, parseSource } from "./header-parse.ts";
import { readDirectory, readStructure, stringOf } from "./tiff-directory.ts";

interface ProbeOptions {
  /**
   * The image is to be read by regions (the runner's way in, so the upload's rule): a TIFF page may
   * exceed MAX_SAMPLES with each block bounded, and the whole image is held to
   * MAX_REGION_IMAGE_SAMPLES (an interlaced PNG and a JPEG, which are read whole, to the whole-image
   * bound). Without it, bounding what a decode allocates is the decoder's, on what it decodes.
   */
  regions?: boolean;
}

/** Probes bytes in memory. */
export function probeImage(bytes: Uint8Array, options: ProbeOptions = {}): ImageProbe {
  return parseBytes(readImageHeaders(bytes.length, options), bytes);
}

/** Probes through ranged reads of `source`, reading only the headers' bytes. */
export function probeImageSource(source: ByteSource, options: ProbeOptions = {}): Promise<ImageProbe> {
  return parseSource(readImageHeaders(source.size, options), source);
}

/** The parser both run: every request lies inside the file (checked here, so errors name the format). */
function* readImageHeaders(size: number, options: ProbeOptions): Parse<ImageProbe> {
  const head = size > 0 ? yield { offset: 0, length: Math.min(SNIFF_BYTES, size), what: "the signature" } : new Uint8Array(0);
  const format = sniffImageFormat(head);
  if (format === "tiff") return yield* readTiffHeaders(size, options);
  if (format === "png") return yield* readPngHeaders(size, options);
  if (format === "jpeg") return yield* readJpegHeaders(size, options);
  if (format === "dicom") return yield* readDicomHeaders(size);
  if (format === "zip") {
    const held = yield* readZipHeaders(size);
    if (held) return held;
  }
  // The words a client sees when its upload is refused (415), an empty file included: the format
  // named where it is one known to microscopy, with a conversion.
  throw new ImageDecodeError(unsupportedFileMessage(head), "unsupported");
}

/** A ZIP's OME-Zarr store, else its DICOM series (zip-image.ts), read by region; null for a ZIP that holds neither. */
function* readZipHeaders(size: number): Parse<ImageProbe | null> {
  const held = yield* readZipImage(size);
  if (!held) return null;
  if (held.kind === "dicom-series") {
    const [full, ...reduced] = held.levels;
    const levels = reduced.map(({ structure }) => ({ width: structure.level.width, height: structure.level.height }));
    return { ...dicomProbe(full!.structure.level), formatName: "DICOM whole-slide series (ZIP)", levels };
  }
  const zarr = held.zarr;
  const { array, axes } = zarr;
  const calibration = trustedCalibration(zarr.pixelSize);
  return {
    format: "zarr",
    width: array.shape[axes.x]!,
    height: array.shape[axes.y]!,
    channels: axes.c === null ? 1 : array.shape[axes.c]!,
    bitDepth: array.dataType.bytes * 8,
    sampleFormat: array.dataType.format,
    pages: 1,
    lossy: false,
    pixelSize: calibration.pixelSize,
    pixelSizeWarning: calibration.warning,
    channelNames: null,
    formatName: zarr.version === 3 ? "OME-Zarr (NGFF 0.5)" : "OME-Zarr (NGFF 0.4)",
    levels: zarr.levels,
    objectiveMagnification: null,
  };
}

/** A DICOM whole-slide level: a tiled pixel matrix (dicom-structure.ts), read by region. */
function* readDicomHeaders(size: number): Parse<ImageProbe> {
  return dicomProbe((yield* readDicomStructure(size)).level);
}

function dicomProbe(level: DicomLevel): ImageProbe {
  const calibration = trustedCalibration(level.pixelSpacingUm && { ...level.pixelSpacingUm, source: "dicom" });
  return {
    format: "dicom",
    width: level.width,
    height: level.height,
    channels: level.channels,
    bitDepth: level.bitsAllocated,
    sampleFormat: "uint",
    pages: 1,
    lossy: level.lossy,
    pixelSize: calibration.pixelSize,
    pixelSizeWarning: calibration.warning,
    channelNames: null,
    formatName: "DICOM whole-slide",
    // One file per level: the file's own level is the image.
    levels: [],
    objectiveMagnification: level.objectivePower,
  };
}

/** What a PNG or JPEG never states. */
const flatImage = { pixelSize: null, pixelSizeWarning: null, channelNames: null, levels: [], objectiveMagnification: null };

function* readPngHeaders(size: number, options: ProbeOptions): Parse<ImageProbe> {
  if (size < 33) throw new ImageDecodeError("PNG truncated: no complete header");
  const chunk = yield { offset: 8, length: 25, what: "the IHDR chunk" };
  const view = new DataView(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  if (view.getUint32(0) !== 13 || view.getUint32(4) !== 0x49484452) throw new ImageDecodeError("PNG corrupt: first chunk is not IHDR");
  const header = readPngHeader(chunk.subarray(8, 21));
  // The runner reads a PNG by rows, so only an interlaced one (decoded whole) is held to the whole-image bound.
  if (options.regions) (header.interlaced ? checkImageSize : checkRegionImageSize)(header.width, header.height, pngWorkingChannels(header));
  if (maxInflatedBytes(8, size) < pngInflatedBytes(header)) {
    throw new ImageDecodeError(`PNG truncated: ${size} bytes cannot hold a ${header.width}x${header.height} image`);
  }
  // A complete PNG ends with an IEND chunk; anything else was cut off in transit.
  if (!pngEndsWithIend(yield { offset: size - 8, length: 8, what: "the IEND chunk" })) {
    throw new ImageDecodeError("PNG truncated: it does not end with an IEND chunk");
  }
  const { width, height, channels, sampleBits } = header;
  return { format: "png", width, height, channels, bitDepth: sampleBits, sampleFormat: "uint", pages: 1, lossy: false, formatName: "PNG", ...flatImage };
}

function* readJpegHeaders(size: number, options: ProbeOptions): Parse<ImageProbe> {
  if (size < 4 || !jpegEndsWithEoi(yield { offset: size - 2, length: 2, what: "the EOI marker" })) {
    throw new ImageDecodeError("JPEG truncated: it does not end with an EOI marker");
  }
  let at = 2;
  for (let segments = 0; at + 4 <= size; segments++) {
    if (segments > MAX_JPEG_SEGMENTS_BEFORE_FRAME) {
      throw new ImageDecodeError(`JPEG corrupt: no frame header in its first ${MAX_JPEG_SEGMENTS_BEFORE_FRAME} marker segments`);
    }
    const marker = yield { offset: at, length: 4, what: "a marker" };
    if (marker[0] !== 0xff) throw new ImageDecodeError("JPEG corrupt: expected a marker");
    const code = marker[1]!;
    if (code === 0xff) {
      at++; // a fill byte
      continue;
    }
    if (isJpegStandaloneMarker(code)) {
      at += 2;
      continue;
    }
    if (code === 0xda) throw new ImageDecodeError("JPEG corrupt: scan data before the frame header");
    const length = (marker[2]! << 8) | marker[3]!;
    if (length < 2) throw new ImageDecodeError("JPEG corrupt: marker segment shorter than its length field");
    if (isJpegFrameMarker(code)) {
      if (at + 10 > size) break;
      const frame = yield { offset: at + 4, length: 6, what: "the frame header" };
      const height = (frame[1]! << 8) | frame[2]!;
      const width = (frame[3]! << 8) | frame[4]!;
      const components = frame[5]!;
      if (width === 0 || height === 0 || components === 0) {
        throw new ImageDecodeError(`JPEG has an invalid frame ${width}x${height} with ${components} components`);
      }
      if (options.regions) checkImageSize(width, height, JPEG_WORKING_CHANNELS);
      if (!jpegFrameFits(width, height, size - (at + 2 + length))) {
        throw new ImageDecodeError(`JPEG truncated: ${size} bytes cannot hold a ${width}x${height} frame`);
      }
      const channels = jpegChannels(components);
      return { format: "jpeg", width, height, channels, bitDepth: frame[0]!, sampleFormat: "uint", pages: 1, lossy: true, formatName: "JPEG", ...flatImage };
    }
    at += 2 + length;
  }
  throw new ImageDecodeError("JPEG truncated: no frame header found");
}

function* readTiffHeaders(size: number, options: ProbeOptions): Parse<ImageProbe> {
  const structure = yield* readStructure(size);
  const firstPage = yield* readDirectory(structure, structure.directories[0]!, size);
  const description = stringOf(firstPage, Tag.ImageDescription);
  const slide = yield* readSlideFacts(structure, size, firstPage);
  const layout = tiffPageLayout(description, structure.directories.length, firstPage.numbers(Tag.SamplesPerPixel)?.[0] ?? 1, slide);
  // The page read as the image: the first, or a slide's full resolution wherever its vendor keeps it.
  const page = layout.pageOf(0, 0);
  const directory = page === 0 ? firstPage : yield* readDirectory(structure, structure.directories[page]!, size);
  const first = pageInfo(directory, page, structure.littleEndian, { regions: options.regions });
  // Before any decoder allocates for it: every block lies in the file and can hold its pixels, and
  // the compressed blocks do not share bytes beyond the file's size.
  for (let b = 0; b < first.blocks; b++) checkTiffBlock(first, page, b, first.offsets[b]!, first.byteCounts?.[b], size);
  new StoredBytesTally(size).add(page, first);
  const channels = layout.channelPages * first.samplesPerPixel;
  // A slide whose tiles overlap is as large as they are laid out (tile-mosaic.ts).
  const { width, height } = (layout.kind === "slide" && mosaicOfPage(slide, page, first)) || first;
  if (options.regions) checkRegionImageSize(width, height, channels);
  const calibration = tiffCalibration(description, directory, slide?.pixelSize ?? null);
  const pyramid = slide && layout.kind === "slide" ? slide.levels : yield* subIfdLevels(structure, size, directory);
  const levels = pyramid.map(({ width, height }) => ({ width, height }));
  return {
    format: "tiff",
    width,
    height,
    channels,
    bitDepth: first.bitsPerSample,
    sampleFormat: first.sampleFormat,
    pages: layout.planes,
    lossy: first.compression === Compression.Jpeg || isJpeg2000Compression(first.compression),
    pixelSize: calibration.pixelSize,
    pixelSizeWarning: calibration.warning,
    channelNames: tiffChannelNames(description, channels),
    formatName: slide && layout.kind === "slide" ? SLIDE_FORMAT_NAMES[slide.vendor] : tiffFormatName(layout.kind, levels.length > 0),
    levels,
    objectiveMagnification: slide?.magnification ?? tiffMagnification(description),
  };
}

/** A TIFF that is no slide, in words. */
function tiffFormatName(kind: PageLayout["kind"], pyramid: boolean): string {
  if (kind === "ome") return pyramid ? "OME-TIFF pyramid" : "OME-TIFF";
  if (kind === "imagej") return "ImageJ TIFF";
  return pyramid ? "pyramidal TIFF" : "TIFF";
}
