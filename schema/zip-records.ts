// The ZIP format's record signatures and field limits (PKWARE APPNOTE 6.3: local file header,
// central directory header, end of central directory, and their ZIP64 forms), shared by the
// rois.zip writer, the ROI archive reader of annotation import and the zipped OME-Zarr reader.
export const LOCAL_HEADER = 0x04034b50;
export const CENTRAL_HEADER = 0x02014b50;
export const END = 0x06054b50;
export const ZIP64_LOCATOR = 0x07064b50;
export const ZIP64_END = 0x06064b50;
export const U16_MAX = 0xffff;
export const U32_MAX = 0xffffffff;
