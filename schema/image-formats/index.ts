// Image-format rules shared by the worker's upload probe and the engine's decoders: one home for
// each signature, header rule and limit, so both sides agree on what an image is.
export { ImageDecodeError } from "./errors.ts";
export * from "./limits.ts";
export { sniffImageFormat, SNIFF_BYTES, unsupportedFileMessage, type ImageFormat } from "./sniff.ts";
export {
  readPngHeader,
  pngInflatedBytes,
  pngEndsWithIend,
  pngRowBytes,
  pngStoredSamples,
  pngWorkingChannels,
  type PngHeader,
} from "./png.ts";
export {
  isJpegFrameMarker,
  isJpegStandaloneMarker,
  jpegChannels,
  jpegEndsWithEoi,
  jpegFrameFits,
  JPEG_WORKING_CHANNELS,
  MAX_JPEG_SEGMENTS_BEFORE_FRAME,
} from "./jpeg.ts";
export { checkJpegTablesWork, compactJpegTables } from "./jpeg-tables.ts";
export { jpeg2000EndsWithEoc, readJpeg2000Header } from "./jpeg2000.ts";
export { Tag, TAGS_READ, TYPE_SIZE, Compression, isJpeg2000Compression, unsupportedCompression, type SampleFormat } from "./tiff-tags.ts";
export {
  checkTiffBlock,
  checkTiffStoredBytes,
  describeTiffPage,
  tiffBlockBytes,
  tiffStoredBytes,
  type DescribeOptions,
  type TiffPage,
  type TiffTags,
} from "./tiff-page.ts";
export { tiffPageLayout, type PageLayout } from "./tiff-hyperstack.ts";
export {
  MAX_ZARR_METADATA_BYTES,
  MAX_ZIP_DIRECTORY_BYTES,
  MAX_ZIP_ENTRIES,
  maxStoredChunkBytes,
  multiscaleOf,
  zarrArrayV2,
  zarrArrayV3,
  zarrAxes,
  zarrPixelSize,
  type ZarrArray,
  type ZarrAxes,
  type ZarrCodec,
  type ZarrMultiscale,
} from "./ome-zarr.ts";
export { isGenericSlide, leicaSlide, philipsPixelSize, SLIDE_FORMAT_NAMES, slideVendorOf, ventanaLevel, ventanaScan, type SlideFacts } from "./tiff-slides.ts";
export { type TileAdvance, ventanaTileAdvance } from "./ventana-overlaps.ts";
export { hamamatsuSlide, MAX_NDPI_JPEG_HEADER_BYTES, restartTiling, type NdpiPage, type RestartTiling } from "./ndpi.ts";
export { describeDicomLevel, MAX_DICOM_FRAME_BYTES, MAX_DICOM_FRAMES, MAX_DICOM_HEADER_BYTES, type DicomLevel } from "./dicom.ts";
export { trustedCalibration, tiffChannelNames, tiffMagnification, tiffCalibration, type PixelSize } from "./calibration.ts";
