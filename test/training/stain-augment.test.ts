import { describe, expect, it } from "vitest";
import type { DecodedImage } from "../../common/decode/index.ts";
import { gaussianBlur, jitterStains, jpegRoundTrip, slideVariant } from "../../gpu-runner/training/stain-augment.ts";
import { SeededRandom } from "../../gpu-runner/training/random.ts";

/** An 8-bit RGB image of `width` x 1 pixels from [r, g, b] triples. */
function rgbRow(pixels: [number, number, number][]): DecodedImage {
  const width = pixels.length;
  const data = new Float32Array(3 * width);
  pixels.forEach((rgb, x) => rgb.forEach((v, c) => (data[c * width + x] = v)));
  return { width, height: 1, channels: 3, bitDepth: 8, sampleFormat: "uint", data };
}

const pixel = (image: DecodedImage, x: number) => [0, 1, 2].map((c) => image.data[c * image.width * image.height + x]!);

describe("stain jitter (colour deconvolution, Ruifrok & Johnston; amounts scaled and shifted, Tellez et al.)", () => {
  const white: [number, number, number] = [255, 255, 255];
  const nucleus: [number, number, number] = [90, 60, 150]; // haematoxylin blue-purple
  const image = rgbRow([white, nucleus, [230, 140, 180]]);

  it("gives the image back when no amount changes", () => {
    const same = jitterStains(image, [1, 1, 1], [0, 0, 0]);
    for (let i = 0; i < image.data.length; i++) expect(same.data[i]).toBeCloseTo(image.data[i]!, 3);
  });

  it("darkens a nucleus with more haematoxylin and keeps empty glass white", () => {
    const more = jitterStains(image, [1.3, 1, 1], [0, 0, 0]);
    expect(pixel(more, 0)).toEqual([255, 255, 255]);
    const [r0, g0, b0] = pixel(image, 1);
    const [r1, g1, b1] = pixel(more, 1);
    expect(r1).toBeLessThan(r0! - 5);
    expect(g1).toBeLessThan(g0! - 5);
    expect(b1).toBeLessThanOrEqual(b0!);
  });
});

describe("focus and compression", () => {
  it("a blur keeps a flat image flat and spreads a bright point over its neighbours", () => {
    const flat = gaussianBlur(rgbRow(Array.from({ length: 9 }, () => [100, 100, 100] as [number, number, number])), 1);
    for (const v of flat.data) expect(v).toBeCloseTo(100, 3);
    const point = gaussianBlur(rgbRow(Array.from({ length: 9 }, (_, x) => (x === 4 ? [255, 0, 0] : [0, 0, 0]) as [number, number, number])), 1);
    expect(pixel(point, 4)[0]).toBeLessThan(255);
    expect(pixel(point, 3)[0]).toBeGreaterThan(0);
  });

  it("a JPEG round trip changes a textured image a little, not a lot", () => {
    const random = new SeededRandom(3);
    const texture = rgbRow(Array.from({ length: 64 }, () => [random.below(256), random.below(256), random.below(256)] as [number, number, number]));
    const back = jpegRoundTrip(texture, 50);
    let diff = 0;
    for (let i = 0; i < texture.data.length; i++) diff += Math.abs(back.data[i]! - texture.data[i]!);
    expect(diff / texture.data.length).toBeGreaterThan(1);
    expect(diff / texture.data.length).toBeLessThan(100);
  });
});

describe("a slide variant", () => {
  it("is the same for the same seed and differs for another", () => {
    const image = rgbRow(Array.from({ length: 32 }, (_, x) => [200 - x, 120 + x, 180] as [number, number, number]));
    const a = slideVariant(image, new SeededRandom(7));
    expect(slideVariant(image, new SeededRandom(7)).data).toEqual(a.data);
    expect(slideVariant(image, new SeededRandom(8)).data).not.toEqual(a.data);
  });
});
