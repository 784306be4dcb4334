// The dashboard, served by the API's worker under /dashboard: server-rendered pages (hono/jsx),
// small scripts and styles from Workers Static Assets (worker/dashboard/public), and JSON routes
// under /dashboard/api (api.ts). Everything past sign-in needs a session (middleware/session.ts).
import { Hono, type Context } from "hono";
import type { AppEnv } from "../env.ts";
import { HttpError, notFound, onError } from "../errors.ts";
import { dashboardSecurityHeaders } from "../middleware/security-headers.ts";
import { clearSessionCookie, requireCsrf, requireSession } from "../middleware/session.ts";
import { listApiKeys } from "../services/api-keys.ts";
import { closeSession, linkSessionsOf, linkSessionView, membershipsOf, switchOrganization } from "../services/dashboard-sessions.ts";
import { ACCESS_LOGOUT_PATH, recordSignOut } from "../services/dashboard-sign-outs.ts";
import { getImage, recentImages } from "../services/images.ts";
import { listJobs } from "../services/job-lists.ts";
import { jobView, predictionView } from "../services/job-views.ts";
import { recentPredictions } from "../services/jobs.ts";
import { listModels, maskDefaultsOf } from "../services/models.ts";
import { previewIndexOf, previewJobOf, previewModalityOf } from "../services/previews.ts";
import { outlinePath, previewUnderlay, referenceFor, scoreAgainst, whyNotScored } from "../services/segmentation-comparison.ts";
import { getSegmentation, segmentationRecordOf, segmentationsOfImage } from "../services/segmentations.ts";
import { trainableImages } from "../services/trainings.ts";
import { usage } from "../services/usage.ts";
import { dashboardApi } from "./api.ts";
import { render } from "./render.tsx";
import { sessionsApi } from "./sessions-api.ts";
import { signIn } from "./sign-in.tsx";
import { Message, type PageContext } from "./layout.tsx";
import { type ComparedSegmentation, ComparePage } from "./pages/compare.tsx";
import { ImagePage } from "./pages/image.tsx";
import { ImagesPage } from "./pages/images.tsx";
import { KeysPage } from "./pages/keys.tsx";
import { ModelsPage } from "./pages/models.tsx";
import { ViewerPage } from "./pages/viewer.tsx";

type DashboardContext = Context<AppEnv>;

async function pageContext(c: DashboardContext): Promise<PageContext> {
  const { email, csrfToken } = c.get("dashboard");
  return { org: c.get("org"), email, csrfToken, organizations: email ? await membershipsOf(c.env.DB, email) : [] };
}

export const dashboard = new Hono<AppEnv>();

// First, so every answer under /dashboard carries the policy: pages, JSON, error pages.
dashboard.use("*", dashboardSecurityHeaders);

// JSON for the scripts, a readable page for a person.
dashboard.onError((err, c) => {
  if (new URL(c.req.url).pathname.startsWith("/dashboard/api/")) return onError(err, c);
  if (!(err instanceof HttpError)) {
    console.error("unhandled dashboard error", c.req.method, new URL(c.req.url).pathname, err);
    return render(
      c,
      <Message title="Something went wrong">
        <p>The error was logged. Try again, or reload the page.</p>
      </Message>,
      500,
    );
  }
  const title =
    err.status === 401
      ? "Sign in to cellseg"
      : err.status === 403
        ? "Not allowed"
        : err.status === 404
          ? "Not found"
          : err.status === 503
            ? "Try again shortly"
            : "Something went wrong";
  for (const [name, value] of Object.entries(err.headers)) c.header(name, value);
  return render(
    c,
    <Message title={title}>
      <p>{String(err.detail)}</p>
    </Message>,
    err.status,
  );
});

dashboard.route("/", signIn);

dashboard.use("*", requireSession, requireCsrf);

// Signing out ends this session for good. Under Access the person also goes through Access's
// logout, and their sign-out is recorded: a token Access issued before it opens no new session
// (middleware/session.ts), so the next request cannot quietly sign them in again.
dashboard.post("/logout", async (c) => {
  const { sessionId, email } = c.get("dashboard");
  await closeSession(c.env.DB, sessionId);
  clearSessionCookie(c);
  if (c.env.DASHBOARD_SIGN_IN === "access") {
    if (email) await recordSignOut(c.env.DB, email);
    return c.redirect(ACCESS_LOGOUT_PATH, 303);
  }
  return c.redirect("/dashboard/signed-out", 303);
});

// A member of several organizations moves their session to another of them (a form post, CSRF-checked).
dashboard.post("/switch-organization", async (c) => {
  const orgId = String((await c.req.parseBody()).org_id ?? "");
  const { sessionId, email } = c.get("dashboard");
  if (!(await switchOrganization(c.env.DB, { id: sessionId, email }, orgId))) throw notFound("Organization", orgId);
  return c.redirect("/dashboard", 303);
});

dashboard.route("/api", dashboardApi);
dashboard.route("/api", sessionsApi);

dashboard.get("/", async (c) => {
  const org = c.get("org");
  return render(c, <ImagesPage page={await pageContext(c)} usage={await usage(c.env.DB, org)} images={await recentImages(c.env.DB, org.id)} />);
});

dashboard.get("/images/:id", async (c) => {
  const org = c.get("org");
  const id = c.req.param("id");
  const image = await getImage(c.env.DB, org.id, id);
  if (!image) throw notFound("Image", id);
  const models = await listModels(c.env.DB, org);
  return render(
    c,
    <ImagePage
      page={await pageContext(c)}
      image={image}
      models={models}
      maskDefaults={Object.fromEntries(await Promise.all(models.map(async (m) => [m.id, await maskDefaultsOf(c.env.BUCKET, m)])))}
      predictions={(await recentPredictions(c.env.DB, org.id, id)).map(predictionView)}
      segmentations={await segmentationsOfImage(c.env.DB, org.id, id)}
      previewModality={previewModalityOf(await previewJobOf(c.env.DB, image))}
    />,
  );
});

// Two segmentations of the image side by side (?a=&b=, the image page's form).
dashboard.get("/images/:id/compare", async (c) => {
  const org = c.get("org");
  const id = c.req.param("id");
  const image = await getImage(c.env.DB, org.id, id);
  if (!image) throw notFound("Image", id);
  const segmentations = await segmentationsOfImage(c.env.DB, org.id, id);
  const pair = [c.req.query("a"), c.req.query("b")].map((chosen) => {
    if (!chosen) throw new HttpError(422, "Choose two segmentations of this image to compare (?a=…&b=…)");
    const found = segmentations.find((s) => s.id === chosen);
    if (!found) throw notFound("Segmentation", chosen);
    return found;
  });
  const reference = referenceFor(segmentations, pair);
  const notScored = whyNotScored(image);
  const compared: ComparedSegmentation[] = [];
  // One after the other: each scoring streams two stored artifacts through the worker.
  for (const segmentation of pair) {
    const scored = reference !== null && reference.id !== segmentation.id && notScored === null;
    compared.push({
      segmentation,
      outlines: await outlinePath(c.env, segmentation),
      scores: scored ? await scoreAgainst(c.env, reference, segmentation) : null,
    });
  }
  const index = await previewIndexOf(c.env, image);
  return render(
    c,
    <ComparePage
      page={await pageContext(c)}
      image={image}
      compared={compared}
      reference={reference}
      notScored={reference ? notScored : null}
      underlay={index ? previewUnderlay(image.id, index) : []}
    />,
  );
});

dashboard.get("/segmentations/:id", async (c) => {
  const id = c.req.param("id");
  const segmentation = await getSegmentation(c.env.DB, c.get("org").id, id);
  if (!segmentation) throw notFound("Segmentation", id);
  const { measurements } = await segmentationRecordOf(c.env.DB, segmentation);
  return render(c, <ViewerPage page={await pageContext(c)} segmentation={segmentation} measurements={measurements} />);
});

dashboard.get("/keys", async (c) => {
  const orgId = c.get("org").id;
  // Sign-in-link sessions exist only where links sign people in; under Access each person's session is their own.
  const sessions =
    c.env.DASHBOARD_SIGN_IN === "link" ? (await linkSessionsOf(c.env.DB, orgId)).map((s) => linkSessionView(s, c.get("dashboard").sessionId)) : null;
  return render(c, <KeysPage page={await pageContext(c)} keys={await listApiKeys(c.env.DB, orgId)} sessions={sessions} />);
});

dashboard.get("/models", async (c) => {
  const org = c.get("org");
  const trainings = await listJobs(c.env.DB, org.id, { kind: "training" }, { limit: 10 }, jobView);
  return render(
    c,
    <ModelsPage
      page={await pageContext(c)}
      models={await listModels(c.env.DB, org)}
      trainable={await trainableImages(c.env.DB, org.id)}
      trainings={trainings.items}
    />,
  );
});
