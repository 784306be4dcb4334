// `import <image-id> <file>`: a corrected segmentation (label image, ImageJ ROIs, QuPath GeoJSON)
// sent to POST /segmentation for one image, so trainings can learn from it.
import { openAsBlob, statSync } from "node:fs";
import { basename } from "node:path";
import { parseArgs } from "node:util";
import type { SegmentationImported } from "../../schema/api-records.ts";
import { CONNECTION_HELP, CONNECTION_OPTIONS, connect, UsageError } from "../connection.ts";
import { ApiError } from "../http.ts";

export const IMPORT_HELP = `npm run client -- import <image-id> <file>   (or --image <image-id> <file>)

Imports a corrected segmentation of one of your images and prints its segmentation id and cell count.
The file is read by its content, whatever its name:
  a label image    PNG (8/16-bit) or TIFF (8/16/32-bit), the image's size, 0 = background,
                   one value per cell (Fiji: Analyze Particles with "Count Masks")
  ImageJ ROIs      a single .roi, or a ROI Manager .zip ("Save...")
  QuPath GeoJSON   polygons in image pixel coordinates (export only the cells)
A training (\`npm run client -- train\`) learns from each image's most recent segmentation.

  --image ID   the image the segmentation belongs to (instead of the first argument)

${CONNECTION_HELP}`;

class ImportRefusedError extends Error {}

export async function importCommand(args: string[], out: NodeJS.WritableStream): Promise<number> {
  const { values, positionals } = parseArgs({ args, options: { ...CONNECTION_OPTIONS, image: { type: "string" } }, allowPositionals: true });
  if (values.help) {
    out.write(`${IMPORT_HELP}\n`);
    return 0;
  }
  const [imageId, file, ...extra] = values.image === undefined ? positionals : [values.image, ...positionals];
  if (!imageId || !file) throw new UsageError("Name the image and the file: import <image-id> <file>");
  if (extra.length) throw new UsageError(`One file per import; not also ${extra.join(", ")}`);
  let isFile = false;
  try {
    isFile = statSync(file).isFile();
  } catch {
    // missing: said below
  }
  if (!isFile) throw new UsageError(`${file} is not a file`);
  const contents = await openAsBlob(file);
  const http = connect(values);
  let imported: SegmentationImported;
  try {
    imported = await http.json<SegmentationImported>("POST", "/segmentation", {
      body: () => {
        const form = new FormData();
        form.append("image_id", imageId);
        form.append("file", contents, basename(file));
        return { body: form, headers: {} };
      },
    });
  } catch (error) {
    if (error instanceof ApiError && error.status !== 401)
      throw new ImportRefusedError(`Could not import ${basename(file)} for image ${imageId} (${error.status}): ${error.detail}`);
    throw error;
  }
  out.write(
    `Imported ${basename(file)} for image ${imported.image_id}: segmentation ${imported.segmentation_id}, ${imported.cell_count} cell${imported.cell_count === 1 ? "" : "s"}${imported.measurements.status === "measuring" ? `; its intensities are being measured from the image (npm run -s client -- segmentation ${imported.segmentation_id} says when)` : ""}\n`,
  );
  return 0;
}
