// GET /export/{segmentation_id}/{format}: streamed straight from the ROI artifact in R2.
import { Hono } from "hono";
import { z } from "zod";
import type { AppEnv } from "../env.ts";
import { HttpError, notFound } from "../errors.ts";
import { contentDisposition, EXPORTS, exportErrorStatus, isExportFormat } from "../exports/index.ts";
import { getSegmentation } from "../services/segmentations.ts";
import { parseOrReject, validate } from "../validation.ts";

export const exportRoutes = new Hono<AppEnv>();

const exportPath = z.object({ id: z.string().min(1).max(100), format: z.string() });
const exportQuery = z.object({ columns: z.array(z.string().min(1).max(100)).max(100).optional() });

exportRoutes.get("/export/:id/:format", validate("param", exportPath), async (c) => {
  const { id, format } = c.req.valid("param");
  if (!isExportFormat(format)) throw new HttpError(404, `Unknown export format ${format}; available: ${Object.keys(EXPORTS).join(", ")}`);
  const columns = c.req.queries("columns");
  const query = parseOrReject(exportQuery, { columns }, "query");
  const segmentation = await getSegmentation(c.env.DB, c.get("org").id, id);
  if (!segmentation) throw notFound("Segmentation", id);
  const artifact = await c.env.BUCKET.get(segmentation.artifactKey);
  if (!artifact) throw new HttpError(404, `Segmentation ${id} has no stored ROIs`);
  try {
    const file = await EXPORTS[format](artifact.body, {
      segmentationId: segmentation.id,
      segmentationSource: segmentation.source,
      modelName: segmentation.modelName,
      imageName: segmentation.imageName,
      imageWidth: segmentation.width,
      imageHeight: segmentation.height,
      confluency: segmentation.confluency,
    }, { columns: query.columns });
    return new Response(file.body, {
      headers: { "Content-Type": file.contentType, "Content-Disposition": contentDisposition(file.fileName), "Cache-Control": "private, no-store" },
    });
  } catch (error) {
    const status = exportErrorStatus(error);
    if (status === 500) {
      console.error(`ROI artifact of segmentation ${id} is unreadable`, error);
      throw new HttpError(500, `The stored ROIs of segmentation ${id} are damaged; run the prediction again`);
    }
    if (status !== null) throw new HttpError(status, error instanceof Error ? error.message : String(error));
    throw error;
  }
});
