// How the pages of a multi-page TIFF map to channels and planes. OME-TIFF (OME-XML in the first
// ImageDescription, Pixels SizeC/SizeZ/SizeT/DimensionOrder) and ImageJ hyperstacks ("ImageJ=" with
// channels=/slices=/frames=, channel fastest) store one channel per page. A whole slide
// (tiff-slides.ts: Aperio, Philips, Leica, Ventana, a generic pyramid) is one plane: its full
// resolution's page; its reduced levels and associated images (thumbnail, label, macro) are no
// planes and are never read as the image. Any other TIFF is a plain stack in which each page is
// its own plane and its samples are the channels.
import type { SlideFacts } from "./tiff-slides.ts";

export interface PageLayout {
  /** Pages holding the channels of one plane (1 for plain stacks). */
  channelPages: number;
  /** Selectable planes (Z×T positions, or pages of a plain stack). */
  planes: number;
  /** Index of the page holding channel page `c` of plane `plane`. */
  pageOf: (plane: number, c: number) => number;
  kind: "plain" | "ome" | "imagej" | "slide";
}

/**
 * The layout of a TIFF of `pageCount` pages from its first ImageDescription, its first page's
 * samples, and what its pages say of a slide (common/decode/tiff-slide.ts): a vendor's slide is one
 * before OME or ImageJ are considered, a generic pyramid only after.
 */
export function tiffPageLayout(description: string | undefined, pageCount: number, samplesPerPixel: number, slide: SlideFacts | null): PageLayout {
  const plain: PageLayout = { channelPages: 1, planes: pageCount, pageOf: (plane) => plane, kind: "plain" };
  const slideLayout: PageLayout | null = slide && { channelPages: 1, planes: 1, pageOf: () => slide.page, kind: "slide" };
  if (slideLayout && slide?.vendor !== "generic") return slideLayout;
  if (description?.includes("<OME")) return omeLayout(description, pageCount, samplesPerPixel) ?? plain;
  if (description?.startsWith("ImageJ=")) return imageJLayout(description, pageCount) ?? plain;
  return slideLayout ?? plain;
}

function omeLayout(xml: string, pageCount: number, samplesPerPixel: number): PageLayout | undefined {
  const pixels = /<(?:\w+:)?Pixels\b([^>]*)>/.exec(xml)?.[1];
  if (!pixels) return undefined;
  const attribute = (name: string) => new RegExp(`\\b${name}\\s*=\\s*"([^"]*)"`).exec(pixels)?.[1];
  const sizeC = Number(attribute("SizeC") ?? 1);
  const sizeZ = Number(attribute("SizeZ") ?? 1);
  const sizeT = Number(attribute("SizeT") ?? 1);
  const order = attribute("DimensionOrder") ?? "XYCZT";
  if (![sizeC, sizeZ, sizeT].every((n) => Number.isInteger(n) && n >= 1)) return undefined;
  // An RGB OME-TIFF counts the samples of a page in SizeC.
  const channelPages = sizeC % samplesPerPixel === 0 ? sizeC / samplesPerPixel : sizeC;
  if (channelPages * sizeZ * sizeT !== pageCount) return undefined;
  const sizes: Record<string, number> = { C: channelPages, Z: sizeZ, T: sizeT };
  const axes = order.slice(2).split(""); // fastest first, e.g. C, Z, T
  if (axes.length !== 3 || !["C", "Z", "T"].every((a) => axes.includes(a))) return undefined;
  return {
    kind: "ome",
    channelPages,
    planes: sizeZ * sizeT,
    pageOf: (plane, c) => {
      const position: Record<string, number> = { C: c, Z: plane % sizeZ, T: Math.floor(plane / sizeZ) };
      let index = 0;
      let stride = 1;
      for (const axis of axes) {
        index += position[axis]! * stride;
        stride *= sizes[axis]!;
      }
      return index;
    },
  };
}

function imageJLayout(description: string, pageCount: number): PageLayout | undefined {
  const field = (name: string) => Number(new RegExp(`^${name}=(\\d+)`, "m").exec(description)?.[1] ?? 1);
  const channels = field("channels");
  const planes = field("slices") * field("frames");
  if (channels * planes !== pageCount || channels < 1) return undefined;
  return { kind: "imagej", channelPages: channels, planes, pageOf: (plane, c) => plane * channels + c };
}
