// DICOM whole-slide images (PS3.3 A.32.8, VL Whole Slide Microscopy Image): what a level's header
// says, read from the data set that dicom-parser (the Cornerstone project's parser) parsed up to
// its Pixel Data. A level is one file: a total pixel matrix cut into tiles, one tile per frame,
// stored row by row (TILED_FULL) or each frame placed by its own position (TILED_SPARSE). The rules
// here are the worker's upload probe's and the runner's reader's alike; the byte reading is in
// common/decode/dicom-structure.ts.
import type { DataSet } from "dicom-parser";
import { ImageDecodeError } from "./errors.ts";
import { micrometres } from "./calibration.ts";
import { checkRegionImageSize } from "./limits.ts";

/** How a transfer syntax stores its frames, and what the readers call it. */
type DicomFrameCoding = "native" | "jpeg" | "jpeg2000";

/** The transfer syntaxes (PS3.5 Annex A) the reader decodes, and the name of each. */
const READ_SYNTAXES: Readonly<Record<string, { name: string; coding: DicomFrameCoding; lossy: boolean }>> = {
  "1.2.840.10008.1.2": { name: "Implicit VR Little Endian", coding: "native", lossy: false },
  "1.2.840.10008.1.2.1": { name: "Explicit VR Little Endian", coding: "native", lossy: false },
  "1.2.840.10008.1.2.4.50": { name: "JPEG Baseline", coding: "jpeg", lossy: true },
  "1.2.840.10008.1.2.4.90": { name: "JPEG 2000 (lossless)", coding: "jpeg2000", lossy: false },
  "1.2.840.10008.1.2.4.91": { name: "JPEG 2000", coding: "jpeg2000", lossy: true },
};

/** Transfer syntaxes met in slide archives that the reader does not decode, named for the refusal. */
const UNREAD_SYNTAXES: Readonly<Record<string, string>> = {
  "1.2.840.10008.1.2.1.99": "Deflated Explicit VR Little Endian",
  "1.2.840.10008.1.2.2": "Explicit VR Big Endian",
  "1.2.840.10008.1.2.4.51": "JPEG Extended (12-bit)",
  "1.2.840.10008.1.2.4.57": "JPEG Lossless",
  "1.2.840.10008.1.2.4.70": "JPEG Lossless (first-order prediction)",
  "1.2.840.10008.1.2.4.80": "JPEG-LS (lossless)",
  "1.2.840.10008.1.2.4.81": "JPEG-LS (near-lossless)",
  "1.2.840.10008.1.2.4.201": "High-Throughput JPEG 2000 (lossless)",
  "1.2.840.10008.1.2.4.202": "High-Throughput JPEG 2000 (RPCL, lossless)",
  "1.2.840.10008.1.2.4.203": "High-Throughput JPEG 2000",
  "1.2.840.10008.1.2.5": "RLE Lossless",
};

/** VL Whole Slide Microscopy Image Storage: the one SOP class read. */
const WSI_SOP_CLASS = "1.2.840.10008.5.1.4.1.1.77.1.6";

/**
 * Bytes of the data set before Pixel Data read at most. A sparse level lists every frame's position
 * there, ~150 bytes each, so this holds ~50,000 frames (a 12-gigapixel tissue area in 512² tiles);
 * the worker's upload probe parses it whole, within its 16 MiB of reads.
 */
export const MAX_DICOM_HEADER_BYTES = 8 * 1024 * 1024;

/**
 * Frames, and tiles of the pixel matrix, of one level: 2^20 holds a 250,000-pixel-wide level in
 * 256² tiles, focal planes and optical paths included. A file claiming millions is refused before
 * any frame table is read.
 */
export const MAX_DICOM_FRAMES = 2 ** 20;

/** Bytes of one frame read at most (a 4096² RGB tile uncompressed is 48 MiB). */
export const MAX_DICOM_FRAME_BYTES = 64 * 1024 * 1024;

/** A level of a DICOM whole-slide image, as its header describes it. */
export interface DicomLevel {
  transferSyntax: string;
  coding: DicomFrameCoding;
  lossy: boolean;
  /** The total pixel matrix. */
  width: number;
  height: number;
  /** One frame's tile. */
  tileWidth: number;
  tileHeight: number;
  samplesPerPixel: number;
  photometric: string;
  /** Native frames store each sample's plane apart (PlanarConfiguration 1). */
  planar: boolean;
  /** 8 or 16. */
  bitsAllocated: number;
  frames: number;
  /**
   * The channels read: a color frame's samples, or, where each optical path is one gray channel
   * (fluorescence), one per optical path.
   */
  channels: number;
  /**
   * `frameOf[channelGroup * tiles + tile]`: the frame that holds a tile (row by row over the matrix)
   * of a channel group (an optical path when each is a channel, else the one group), or -1 where
   * a sparse level stores none.
   */
  frameOf: Int32Array;
  tilesAcross: number;
  tilesDown: number;
  /** Micrometres per pixel from the Pixel Measures' PixelSpacing (row spacing is y), or null. */
  pixelSpacingUm: { x: number; y: number } | null;
  /** The objective's power (ObjectiveLensPower of the first optical path), or null. */
  objectivePower: number | null;
  /** Where Pixel Data's value starts, and its length (undefined for encapsulated frames). */
  pixelDataOffset: number;
  pixelDataLength: number | undefined;
}

const corrupt = (why: string) => new ImageDecodeError(`DICOM corrupt: ${why}`);

/** A required unsigned value; `what` names it in the error. */
function required(value: number | undefined, what: string): number {
  if (value === undefined || !Number.isSafeInteger(value) || value < 1) throw corrupt(`${what} is missing or not a positive integer`);
  return value;
}

/** The first item's data set of a sequence, if the sequence has one. */
function firstItem(set: DataSet | undefined, tag: string): DataSet | undefined {
  return set?.elements[tag]?.items?.[0]?.dataSet;
}

/** A decimal string's value as a finite number, or null. */
function decimal(set: DataSet | undefined, tag: string, index = 0): number | null {
  const value = set?.floatString(tag, index);
  return value !== undefined && Number.isFinite(value) ? value : null;
}

/** Why the transfer syntax cannot be read, or what it codes. */
function transferSyntaxOf(uid: string | undefined): { coding: DicomFrameCoding; lossy: boolean } {
  if (!uid) throw corrupt("no transfer syntax (0002,0010) in its meta header");
  const read = READ_SYNTAXES[uid];
  if (read) return read;
  const name = UNREAD_SYNTAXES[uid];
  const readable = Object.values(READ_SYNTAXES)
    .map((s) => s.name)
    .join(", ");
  throw new ImageDecodeError(
    `DICOM transfer syntax ${name ? `${name} (${uid})` : uid} is not supported (read: ${readable}); transcode it, e.g. with dcmtk's dcmdjpeg or gdcmconv --raw`,
    "unsupported",
  );
}

/**
 * The level a parsed data set describes; throws an ImageDecodeError for a file that is no whole-slide
 * level the reader can read, and for one whose declared sizes cannot be true, before any frame is read.
 */
export function describeDicomLevel(set: DataSet, pixelData: { dataOffset: number; length: number; hadUndefinedLength?: boolean }): DicomLevel {
  const sopClass = set.string("x00080016");
  if (sopClass !== WSI_SOP_CLASS) {
    throw new ImageDecodeError(
      `DICOM ${sopClass ? `SOP class ${sopClass}` : "file without a SOP class"} is not a whole-slide image (VL Whole Slide Microscopy Image, ${WSI_SOP_CLASS}): only slides are read`,
      "unsupported",
    );
  }
  // ImageType's third value says which image of the slide this is; only the pyramid's are pixels to segment.
  const flavor = set.string("x00080008", 2)?.toUpperCase();
  if (flavor === "LABEL" || flavor === "OVERVIEW" || flavor === "THUMBNAIL") {
    throw new ImageDecodeError(
      `this DICOM file is the slide's ${flavor.toLowerCase()} image, not its pyramid: upload the file of the full-resolution level (ImageType VOLUME)`,
      "unsupported",
    );
  }
  const { coding, lossy } = transferSyntaxOf(set.string("x00020010"));
  const tileHeight = required(set.uint16("x00280010"), "Rows");
  const tileWidth = required(set.uint16("x00280011"), "Columns");
  const width = required(set.uint32("x00480006"), "TotalPixelMatrixColumns");
  const height = required(set.uint32("x00480007"), "TotalPixelMatrixRows");
  const frames = required(set.intString("x00280008") ?? 1, "NumberOfFrames");
  const samplesPerPixel = required(set.uint16("x00280002"), "SamplesPerPixel");
  const bitsAllocated = required(set.uint16("x00280100"), "BitsAllocated");
  const photometric = (set.string("x00280004") ?? "").toUpperCase();
  if (set.uint16("x00280103") === 1) throw new ImageDecodeError("DICOM frames of signed samples are not supported", "unsupported");
  if (samplesPerPixel === 1 ? photometric !== "MONOCHROME2" : samplesPerPixel !== 3 || !/^(RGB|YBR_FULL|YBR_FULL_422|YBR_ICT|YBR_RCT)$/.test(photometric)) {
    throw new ImageDecodeError(`DICOM photometric interpretation ${photometric || "(none)"} with ${samplesPerPixel} samples is not supported`, "unsupported");
  }
  if (bitsAllocated !== 8 && !(bitsAllocated === 16 && samplesPerPixel === 1 && coding === "native")) {
    throw new ImageDecodeError(`DICOM frames of ${bitsAllocated} bits allocated are not supported (8, or 16 for uncompressed gray)`, "unsupported");
  }
  if (coding === "native" && photometric.startsWith("YBR")) {
    throw new ImageDecodeError(`DICOM uncompressed frames in ${photometric} are not supported`, "unsupported");
  }
  if (frames > MAX_DICOM_FRAMES) {
    throw new ImageDecodeError(`DICOM declares ${frames} frames, more than the ${MAX_DICOM_FRAMES} one level may hold`, "too-large");
  }
  const tilesAcross = Math.ceil(width / tileWidth);
  const tilesDown = Math.ceil(height / tileHeight);
  if (tilesAcross * tilesDown > MAX_DICOM_FRAMES) {
    throw new ImageDecodeError(
      `DICOM's ${width}x${height} matrix in ${tileWidth}x${tileHeight} tiles is ${tilesAcross * tilesDown} tiles, more than ${MAX_DICOM_FRAMES}`,
      "too-large",
    );
  }
  const opticalPaths = Math.max(1, set.uint32("x00480302") ?? 1);
  const focalPlanes = Math.max(1, set.uint32("x00480303") ?? 1);
  // Fluorescence keeps each channel as an optical path of gray frames; a color level's paths beyond the first are left out.
  const groups = samplesPerPixel === 1 ? opticalPaths : 1;
  const channels = samplesPerPixel === 1 ? opticalPaths : samplesPerPixel;
  checkRegionImageSize(width, height, channels);
  const frameOf = new Int32Array(groups * tilesAcross * tilesDown).fill(-1);
  const tiles = tilesAcross * tilesDown;
  const organization = (set.string("x00209311") ?? "").toUpperCase();
  if (organization === "TILED_FULL" || (organization === "" && !set.elements.x52009230)) {
    // PS3.3 C.7.6.17.3: columns fastest, then rows, then focal planes, then optical paths.
    if (frames < tiles * focalPlanes * groups) {
      throw corrupt(`a TILED_FULL level of ${tiles} tiles x ${focalPlanes} focal planes x ${groups} channels needs that many frames; it has ${frames}`);
    }
    for (let group = 0; group < groups; group++) {
      for (let tile = 0; tile < tiles; tile++) frameOf[group * tiles + tile] = group * focalPlanes * tiles + tile;
    }
  } else {
    placeSparseFrames(set, { frames, tileWidth, tileHeight, tilesAcross, tilesDown, groups }, frameOf);
  }
  const frameBytes = tileWidth * tileHeight * samplesPerPixel * (bitsAllocated / 8);
  if (frameBytes > MAX_DICOM_FRAME_BYTES) {
    throw new ImageDecodeError(`DICOM frames of ${tileWidth}x${tileHeight} are larger than the ${MAX_DICOM_FRAME_BYTES} bytes a frame may hold`, "too-large");
  }
  const encapsulated = pixelData.hadUndefinedLength === true;
  if (coding === "native" ? encapsulated : !encapsulated) {
    throw corrupt(`its Pixel Data is ${encapsulated ? "encapsulated" : "native"}, which its transfer syntax does not allow`);
  }
  if (!encapsulated && pixelData.length < frames * frameBytes) {
    throw corrupt(`its Pixel Data holds ${pixelData.length} bytes, not the ${frames} frames of ${frameBytes} bytes it declares`);
  }
  return {
    transferSyntax: set.string("x00020010")!,
    coding,
    lossy: lossy || set.string("x00282110") === "01",
    width,
    height,
    tileWidth,
    tileHeight,
    samplesPerPixel,
    photometric,
    planar: set.uint16("x00280006") === 1,
    bitsAllocated,
    frames,
    channels,
    frameOf,
    tilesAcross,
    tilesDown,
    pixelSpacingUm: pixelSpacing(set),
    objectivePower: decimal(firstItem(set, "x00480105"), "x00480112"),
    pixelDataOffset: pixelData.dataOffset,
    pixelDataLength: encapsulated ? undefined : pixelData.length,
  };
}

/**
 * TILED_SPARSE: each frame's Plane Position (Slide) in the Per-Frame Functional Groups gives its
 * tile's top-left pixel (1-based). Frames of the first focal plane (Z offset) are kept, grouped by
 * optical path where each path is a channel.
 */
function placeSparseFrames(
  set: DataSet,
  grid: { frames: number; tileWidth: number; tileHeight: number; tilesAcross: number; tilesDown: number; groups: number },
  frameOf: Int32Array,
): void {
  const perFrame = set.elements.x52009230?.items;
  if (!perFrame || perFrame.length !== grid.frames) {
    throw corrupt(`a TILED_SPARSE level must place each of its ${grid.frames} frames (Per-Frame Functional Groups has ${perFrame?.length ?? 0})`);
  }
  const tiles = grid.tilesAcross * grid.tilesDown;
  const paths = new Map<string, number>();
  let firstZ: number | null | undefined;
  perFrame.forEach((item, frame) => {
    const position = firstItem(item.dataSet, "x0048021a");
    const column = position?.int32("x0048021e");
    const row = position?.int32("x0048021f");
    if (column === undefined || row === undefined) throw corrupt(`frame ${frame + 1} has no position in the pixel matrix`);
    const z = decimal(position, "x0040074a");
    firstZ ??= z;
    if (z !== firstZ) return;
    const path = firstItem(item.dataSet, "x00480207")?.string("x00480106") ?? "";
    let group = paths.get(path);
    if (group === undefined) paths.set(path, (group = paths.size));
    if (group >= grid.groups) return;
    const [x, y] = [column - 1, row - 1];
    if (
      x < 0 ||
      y < 0 ||
      x % grid.tileWidth !== 0 ||
      y % grid.tileHeight !== 0 ||
      x >= grid.tilesAcross * grid.tileWidth ||
      y >= grid.tilesDown * grid.tileHeight
    ) {
      throw corrupt(`frame ${frame + 1} lies at (${column}, ${row}), off the grid of ${grid.tileWidth}x${grid.tileHeight} tiles`);
    }
    frameOf[group * tiles + (y / grid.tileHeight) * grid.tilesAcross + x / grid.tileWidth] = frame;
  });
}

/** PixelSpacing (mm, row spacing first) of the Shared Functional Groups' Pixel Measures, in µm. */
function pixelSpacing(set: DataSet): { x: number; y: number } | null {
  const measures = firstItem(firstItem(set, "x52009229"), "x00289110");
  const rowSpacing = decimal(measures, "x00280030", 0);
  const columnSpacing = decimal(measures, "x00280030", 1);
  if (rowSpacing === null || columnSpacing === null || rowSpacing <= 0 || columnSpacing <= 0) return null;
  const [x, y] = [micrometres(columnSpacing, "mm"), micrometres(rowSpacing, "mm")];
  return x && y ? { x, y } : null;
}
