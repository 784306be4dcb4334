// Two segmentations of one image side by side: which model made each, its cells, its outlines over
// the image, and where the image has an imported annotation, its AP@0.5 and AP@0.75 against it
// (services/segmentation-comparison.ts). What `npm run client -- compare` prints, for a person.
import type { Image } from "../../services/images.ts";
import type { PlacedTile, Scores } from "../../services/segmentation-comparison.ts";
import type { Segmentation } from "../../services/segmentations.ts";
import { formatDate, Layout, type PageContext } from "../layout.tsx";

export interface ComparedSegmentation {
  segmentation: Segmentation;
  /** Its outlines as one SVG path in image pixels; null: too many to draw here. */
  outlines: string | null;
  /** Against the reference; null where there is none, it is the reference, or the image is too large to score here. */
  scores: Scores | null;
}

/** "cpsam v3", or "imported annotation". */
export function madeBy(s: Segmentation): string {
  return s.modelName ? `${s.modelName} v${s.modelVersion}` : "imported annotation";
}

const score = (ap: number) => ap.toFixed(3);

function Overlay(props: { image: Image; compared: ComparedSegmentation; underlay: PlacedTile[] }) {
  const { segmentation: s, outlines } = props.compared;
  return (
    <svg class="overlay" viewBox={`0 0 ${s.width} ${s.height}`} role="img" aria-label={`${madeBy(s)}: ${s.roiCount} cells over ${props.image.name}`}>
      {props.underlay.map((t) => (
        <image href={t.href} x={t.x} y={t.y} width={t.width} height={t.height} preserveAspectRatio="none" />
      ))}
      {outlines !== null && <path class="outlines" d={outlines} />}
    </svg>
  );
}

function Side(props: { image: Image; compared: ComparedSegmentation; reference: Segmentation | null; underlay: PlacedTile[] }) {
  const { segmentation: s, outlines, scores } = props.compared;
  const isReference = props.reference?.id === s.id;
  return (
    <section class="card compare-side" data-segmentation-id={s.id}>
      <h2>{madeBy(s)}</h2>
      <dl class="facts">
        <dt>Made</dt>
        <dd>{formatDate(s.createdAt)}</dd>
        <dt>Cells</dt>
        <dd class="cells">{s.roiCount.toLocaleString("en-US")}</dd>
        {scores && (
          <>
            <dt>AP@0.5</dt>
            <dd class="ap50">{score(scores.ap50)}</dd>
            <dt>AP@0.75</dt>
            <dd class="ap75">{score(scores.ap75)}</dd>
          </>
        )}
        {isReference && (
          <>
            <dt>AP</dt>
            <dd>the reference the other is scored against</dd>
          </>
        )}
      </dl>
      <Overlay image={props.image} compared={props.compared} underlay={props.underlay} />
      {outlines === null && <p class="note">Too many cells to draw here: the viewer draws them a tile at a time.</p>}
      <p>
        <a class="button small" href={`/dashboard/segmentations/${s.id}`}>
          Open in the viewer
        </a>
      </p>
    </section>
  );
}

export function ComparePage(props: {
  page: PageContext;
  image: Image;
  compared: ComparedSegmentation[];
  /** The imported annotation the two are scored against, if the image has one. */
  reference: Segmentation | null;
  /** Why the two are not scored, where the image is too large; null otherwise. */
  notScored: string | null;
  underlay: PlacedTile[];
}) {
  const { image, reference } = props;
  return (
    <Layout page={props.page} section="images" title={`Compare · ${image.name}`} wide>
      <p class="crumbs">
        <a href="/dashboard">Images</a> / <a href={`/dashboard/images/${image.id}`}>{image.name}</a> / compare
      </p>
      <p class="compare-reference">
        {reference === null
          ? "This image has no imported annotation to score them against: import one (the API's POST /segmentation, `npm run client -- import`, or corrections saved in the viewer) to see each one's AP."
          : (props.notScored ??
            `AP against the ${madeBy(reference)} of ${formatDate(reference.createdAt)} (${reference.roiCount.toLocaleString("en-US")} cells), as training scores: a cell is found when its outline overlaps the annotated one by the IoU named.`)}
      </p>
      <div class="compare">
        {props.compared.map((compared) => (
          <Side image={image} compared={compared} reference={reference} underlay={props.underlay} />
        ))}
      </div>
    </Layout>
  );
}
