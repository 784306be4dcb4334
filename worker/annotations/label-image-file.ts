// Label images (PNG 8/16-bit, TIFF 8/16/32-bit integer or float holding whole numbers): 0 is
// background, every other value one object; values need not be consecutive. Decoded by the
// engine's decoders (common/decode) once the headers say the size is the image's; the
// TIFF decoder inflates each strip to at most its expected size, and a PNG's image data is
// inflated here first with a bound, so a bomb is refused as over a limit (422) rather than as an
// unreadable image.

import { decodeImage, ImageDecodeError, probeImage, type ImageProbe } from "../../common/decode/index.ts";
import { inflateWithin } from "../../common/decode/inflate-bounded.ts";
import { AnnotationImportError } from "./errors.ts";
import { MAX_IMPORT_OBJECTS } from "./limits.ts";

/** The decoders hand samples over as float32, which holds every whole number up to 2^24 exactly. */
const MAX_LABEL_VALUE = 2 ** 24;

function unreadable(error: unknown): never {
  if (error instanceof ImageDecodeError) throw new AnnotationImportError("unreadable", `label image unreadable: ${error.message}`);
  throw error;
}

interface LabelImageFile {
  /** The label values, width x height, still in the file's numbering. */
  labels: Uint32Array;
  /** How many different non-zero values it holds. */
  distinctLabels: number;
}

export function labelsFromImageFile(bytes: Uint8Array, width: number, height: number): LabelImageFile {
  let probe: ImageProbe;
  try {
    probe = probeImage(bytes);
  } catch (error) {
    unreadable(error);
  }
  if (probe.format === "jpeg") {
    throw new AnnotationImportError(
      "unsupported_type",
      "a JPEG cannot be a label image (lossy compression changes the labels); save the labels as PNG or TIFF",
    );
  }
  if (probe.lossy) {
    throw new AnnotationImportError(
      "unsupported_type",
      "a JPEG-compressed TIFF cannot be a label image (lossy compression changes the labels); save the labels uncompressed, or with LZW or Deflate",
    );
  }
  if (probe.width !== width || probe.height !== height) {
    throw new AnnotationImportError("wrong_size", `the label image is ${probe.width}x${probe.height} but the image is ${width}x${height}`);
  }
  if (probe.pages !== 1) throw new AnnotationImportError("invalid_content", `the label image has ${probe.pages} planes; a label image has one`);
  if (probe.channels !== 1) {
    throw new AnnotationImportError("invalid_content", `the label image has ${probe.channels} channels; a label image has one (grayscale, 8, 16 or 32-bit)`);
  }
  if (probe.format === "png") checkPngInflatedSize(bytes, probe);
  let data: Float32Array;
  try {
    data = decodeImage(bytes).data;
  } catch (error) {
    unreadable(error);
  }
  if (data.length < width * height) {
    throw new AnnotationImportError("unreadable", `label image unreadable: it decodes to ${data.length} samples, not the ${width}x${height} its header gives`);
  }
  // Converted in place: element i is read as a float before it is written as an integer.
  const labels = new Uint32Array(data.buffer, data.byteOffset, width * height);
  const seen = new Set<number>();
  let previous = 0;
  // Neighbours along rows where both pixels are objects, and how many of them differ: see looksLikeIntensities.
  let pairs = 0;
  let changes = 0;
  let objectPixels = 0;
  for (let i = 0; i < labels.length; i++) {
    const v = data[i]!; // labels.length is width * height, which data holds (checked above)
    if (v === previous) {
      labels[i] = v;
      if (v !== 0) {
        pairs++;
        objectPixels++;
      }
      continue;
    }
    if (v !== 0 && previous !== 0) {
      pairs++;
      changes++;
    }
    if (!(Number.isInteger(v) && v >= 0 && v <= MAX_LABEL_VALUE)) {
      const where = `pixel (${i % width}, ${Math.floor(i / width)})`;
      if (Number.isInteger(v) && v > MAX_LABEL_VALUE) {
        throw new AnnotationImportError("limit_exceeded", `${where} has label ${v}; label values may be at most ${MAX_LABEL_VALUE} (renumber the labels)`);
      }
      throw new AnnotationImportError("invalid_content", `${where} has the value ${v}; labels are whole numbers, 0 for background`);
    }
    labels[i] = v;
    previous = v;
    if (v !== 0) objectPixels++;
    if (v !== 0 && !seen.has(v)) {
      seen.add(v);
      if (seen.size > MAX_IMPORT_OBJECTS) {
        throw new AnnotationImportError(
          "too_many_objects",
          `the label image holds more than ${MAX_IMPORT_OBJECTS.toLocaleString("en-US")} objects, the most one import may hold`,
        );
      }
    }
  }
  if (looksLikeIntensities(pairs, changes, objectPixels, seen.size)) {
    throw new AnnotationImportError(
      "invalid_content",
      `this looks like an intensity image (the microscope's picture), not a label image: ${Math.round((100 * changes) / pairs)}% of neighbouring non-zero pixels differ, where a label image's cells are regions of one value each. Import the cells' labels (0 for background, one whole number per cell, as Fiji's Analyze Particles writes with "Count Masks"), ImageJ ROIs or QuPath GeoJSON`,
    );
  }
  return { labels, distinctLabels: seen.size };
}

/** Neighbouring object pixels below which the test below says nothing (a few cells of a few pixels). */
const MIN_PAIRS_TO_TELL = 1000;
/** Pixels per value at least: a micrograph has few values (at most 65,536 in 16 bits) over many pixels. */
const MIN_PIXELS_PER_VALUE = 4;

/**
 * A label image's cells are regions of one value: two neighbours along a row differ only where
 * one cell meets another, about once per cell width (a fifth of the time for cells 5 px wide, the
 * smallest a model finds). A micrograph's pixels vary from one to the next (noise, gradients), so
 * most neighbours differ, and each of its few values is used on many pixels. Both together are
 * an intensity image given by mistake: said so at once, before objects are traced (which on such
 * an image finds thousands of "objects" spread over the whole image, refused later only by a
 * limit that does not say why). A file of many tiny objects of a few pixels each is no picture:
 * the limits below answer it.
 */
function looksLikeIntensities(pairs: number, changes: number, objectPixels: number, values: number): boolean {
  return pairs >= MIN_PAIRS_TO_TELL && changes > pairs / 2 && objectPixels >= MIN_PIXELS_PER_VALUE * values;
}

/**
 * Refuses a PNG whose image data (the IDAT chunks, one zlib stream; PNG specification, W3C 2003,
 * sections 5.3 and 10) inflates past what its header's size needs: filtered rows of a one-channel
 * image, with room for Adam7 interlacing's extra row starts.
 */
function checkPngInflatedSize(bytes: Uint8Array, probe: ImageProbe): void {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const parts: Uint8Array[] = [];
  let total = 0;
  for (let at = 8; at + 8 <= bytes.length; ) {
    const length = view.getUint32(at);
    const type = view.getUint32(at + 4);
    const data = bytes.subarray(at + 8, Math.min(bytes.length, at + 8 + length));
    if (type === 0x49444154) {
      parts.push(data);
      total += data.length;
    }
    if (type === 0x49454e44) break;
    at += 12 + length;
  }
  const stream = new Uint8Array(total);
  let offset = 0;
  for (const part of parts) {
    stream.set(part, offset);
    offset += part.length;
  }
  const rowBytes = Math.ceil((probe.width * probe.bitDepth) / 8);
  const bound = probe.height * (1 + rowBytes) + 16 * (probe.height + 8);
  if (inflateWithin(stream, bound, { framing: "zlib", complete: false }) === "too large") {
    throw new AnnotationImportError(
      "limit_exceeded",
      `the PNG's image data inflates past the ${bound.toLocaleString("en-US")} bytes a ${probe.width}x${probe.height} label image needs`,
    );
  }
}
