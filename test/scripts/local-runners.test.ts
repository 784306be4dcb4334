// npm start's RUNNERS and RUNNER_THREADS: how many runners it starts, and what each is given.
import { describe, expect, it } from "vitest";
import { localRunners } from "../../scripts/local-runners.ts";

describe("npm start's runners", () => {
  it("starts one by default, named local-1", () => {
    expect(localRunners({})).toEqual([{ RUNNER_ID: "local-1" }]);
    expect(localRunners({ RUNNERS: "" })).toEqual([{ RUNNER_ID: "local-1" }]);
  });

  it("starts RUNNERS of them under distinct names, each with RUNNER_THREADS when it is set", () => {
    expect(localRunners({ RUNNERS: "3", RUNNER_THREADS: "1" })).toEqual([
      { RUNNER_ID: "local-1", RUNNER_THREADS: "1" },
      { RUNNER_ID: "local-2", RUNNER_THREADS: "1" },
      { RUNNER_ID: "local-3", RUNNER_THREADS: "1" },
    ]);
    expect(localRunners({ RUNNERS: " 2 " })).toEqual([{ RUNNER_ID: "local-1" }, { RUNNER_ID: "local-2" }]);
  });

  it("refuses a RUNNERS that is not a whole number of at least 1, saying what it got", () => {
    for (const bad of ["0", "-1", "1.5", "two", "2x"]) {
      expect(() => localRunners({ RUNNERS: bad })).toThrow(`RUNNERS must be a whole number of runners, at least 1; got ${JSON.stringify(bad)}`);
    }
  });
});
