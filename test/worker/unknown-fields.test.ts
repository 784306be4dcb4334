// A request body that names a field the service does not have is answered 422 in the contract's
// validation shape, naming the field: never carried out without it. The issue's case: a diameter
// beside `params` instead of under it was accepted (202) and ran with the defaults.
import { describe, expect, it } from "vitest";
import { call, createOrg, json, uploadImage } from "./helpers.ts";

interface Issue {
  loc: (string | number)[];
  msg: string;
  type: string;
  input?: unknown;
}

async function issues(response: Response): Promise<Issue[]> {
  expect(response.status).toBe(422);
  return (await json<{ detail: Issue[] }>(response)).detail;
}

describe("fields a request body does not have", () => {
  it("a segmentation parameter beside params is refused, and the message says where it goes", async () => {
    const org = await createOrg();
    const image = await uploadImage(org);
    const response = await call("/predict", { key: org.key, json: { image_id: image.id, model_id: "cpsam", diameter: 1000000 } });
    expect(await issues(response)).toEqual([
      {
        loc: ["body", "diameter"],
        msg: '"diameter" is not a field of a prediction request: segmentation parameters go under "params", as {"image_id": …, "model_id": …, "params": {"diameter": …}}',
        type: "extra_forbidden",
        input: 1000000,
      },
    ]);
    // Nothing was queued.
    expect((await json<{ items: unknown[] }>(await call("/predictions", { key: org.key }))).items).toEqual([]);
  });

  it("each unknown field is named, at every level: the request's, the parameters', a training's", async () => {
    const org = await createOrg();
    const image = await uploadImage(org);
    const prediction = await call("/predict", {
      key: org.key,
      json: { image_id: image.id, model_id: "cpsam", modle: "x", params: { diameter: 20, flow_treshold: 0.5 } },
    });
    expect((await issues(prediction)).map(({ loc, msg }) => ({ loc, msg }))).toEqual([
      { loc: ["body", "params", "flow_treshold"], msg: '"flow_treshold" is not a field of the segmentation parameters' },
      { loc: ["body", "modle"], msg: '"modle" is not a field of a prediction request' },
    ]);
    const training = await call("/job/training", { key: org.key, json: { model_id: "cpsam", image_ids: [image.id], epochs: 10 } });
    expect(await issues(training)).toEqual([
      { loc: ["body", "epochs"], msg: '"epochs" is not a field of a training request', type: "extra_forbidden", input: 10 },
    ]);
  });

  it("the fields the contract names are taken as before", async () => {
    const org = await createOrg();
    const image = await uploadImage(org);
    expect((await call("/predict", { key: org.key, json: { image_id: image.id, model_id: "cpsam", params: { diameter: 20 } } })).status).toBe(202);
  });
});
