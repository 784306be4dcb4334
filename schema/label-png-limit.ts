// The most cells a 16-bit label PNG (masks.png) can hold: labels 1..65535, 0 the background. A
// segmentation with more is exported as masks.tif (32-bit labels); the runner's CLI, the worker's
// export and the client all decide by this one number.
export const PNG_MAX_LABEL = 0xffff;
