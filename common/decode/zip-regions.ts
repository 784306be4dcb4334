// What an uploaded ZIP holds (zip-image.ts), read by region: an OME-Zarr store's chunks, or a DICOM
// series' levels, each read as the file it is inside the archive.
import { ImageDecodeError } from "../../schema/image-formats/index.ts";
import { cachedSource } from "./byte-ranges.ts";
import { type ByteSource, subSource } from "./byte-source.ts";
import { openDicomRegions } from "./dicom-regions.ts";
import type { SeriesLevel } from "./dicom-series.ts";
import { parseSource } from "./header-parse.ts";
import type { ImageRegions } from "./region.ts";
import { openZarrRegions } from "./zarr-regions.ts";
import { readZipImage } from "./zip-image.ts";

export async function openZipRegions(source: ByteSource): Promise<ImageRegions> {
  const image = await parseSource(readZipImage(source.size), cachedSource(source));
  if (!image) throw new ImageDecodeError("the ZIP archive holds no OME-Zarr store and no DICOM whole-slide series", "unsupported");
  if (image.kind === "zarr") return openZarrRegions(source, image.zarr);
  const [full, ...reduced] = image.levels;
  const level = (series: SeriesLevel) => openDicomRegions(subSource(source, series.start, series.size));
  return {
    ...(await level(full!)),
    levels: reduced.map((l) => ({ width: l.structure.level.width, height: l.structure.level.height })),
    ...(reduced.length > 0 && { readLevel: (index: number) => level(reduced[index]!) }),
  };
}
