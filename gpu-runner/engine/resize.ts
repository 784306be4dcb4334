// Bilinear resizing of planar images with pixel-centre alignment (as OpenCV's INTER_LINEAR, which
// Cellpose uses to rescale images and network outputs): source x = (x + 0.5) · sw / dw − 0.5,
// clamped to the edge.

export function resizePlanar(data: Float32Array, channels: number, width: number, height: number, newWidth: number, newHeight: number): Float32Array {
  if (newWidth === width && newHeight === height) return data.slice();
  const out = new Float32Array(channels * newWidth * newHeight);
  const x0s = new Int32Array(newWidth),
    x1s = new Int32Array(newWidth);
  const fxs = new Float32Array(newWidth);
  for (let x = 0; x < newWidth; x++) {
    const sx = Math.min(Math.max((x + 0.5) * (width / newWidth) - 0.5, 0), width - 1);
    x0s[x] = Math.floor(sx);
    x1s[x] = Math.min(x0s[x]! + 1, width - 1);
    fxs[x] = sx - x0s[x]!;
  }
  for (let c = 0; c < channels; c++) {
    const src = c * width * height;
    const dst = c * newWidth * newHeight;
    for (let y = 0; y < newHeight; y++) {
      const sy = Math.min(Math.max((y + 0.5) * (height / newHeight) - 0.5, 0), height - 1);
      const y0 = Math.floor(sy),
        y1 = Math.min(y0 + 1, height - 1);
      const fy = sy - y0;
      const row0 = src + y0 * width,
        row1 = src + y1 * width;
      for (let x = 0; x < newWidth; x++) {
        const a = data[row0 + x0s[x]!]!,
          b = data[row0 + x1s[x]!]!;
        const c0 = data[row1 + x0s[x]!]!,
          d = data[row1 + x1s[x]!]!;
        const fx = fxs[x]!;
        out[dst + y * newWidth + x] = (1 - fy) * (a + fx * (b - a)) + fy * (c0 + fx * (d - c0));
      }
    }
  }
  return out;
}
