// What the install notes (docs/architecture.md, "Running it locally", which the README's Quick start
// links) say `npm ci` prints is what the lock file makes it print: the EBADENGINE
// warnings on Node 20.20 (one per package whose `engines` that Node does not satisfy, this project
// included), and no "install scripts not yet covered by allowScripts" advisory, because
// package.json's allowScripts lists exactly the packages that have install scripts.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";

const root = new URL("../../", import.meta.url);
const read = (path: string) => readFileSync(new URL(path, root), "utf8");
const semver = createRequire(import.meta.url)("semver") as { satisfies(version: string, range: string): boolean };

interface LockedPackage {
  version?: string;
  engines?: { node?: string };
  optional?: boolean;
  hasInstallScript?: boolean;
}
const lock = JSON.parse(read("package-lock.json")) as { packages: Record<string, LockedPackage> };
const manifest = JSON.parse(read("package.json")) as { name: string; engines: { node: string }; allowScripts: Record<string, boolean> };
const nameOf = (path: string) => path.slice(path.lastIndexOf("node_modules/") + "node_modules/".length);
const installNotes = read("docs/architecture.md").replace(/\s+/g, " ");

describe("npm ci's output, as the install notes describe it", () => {
  it("warns EBADENGINE on Node 20.20 exactly for the packages the notes name, this project among them", () => {
    const refused = Object.entries(lock.packages)
      .filter(([path, p]) => path !== "" && !p.optional && p.engines?.node && !semver.satisfies("20.20.2", p.engines.node))
      .map(([path]) => nameOf(path))
      .sort();
    expect(semver.satisfies("20.20.2", manifest.engines.node)).toBe(false);
    expect(installNotes).toContain(`warns \`EBADENGINE\` ${refused.length + 1} times: for this project`);
    for (const name of refused) expect(installNotes).toContain(`\`${name}\``);
  });

  it("leaves no install script unreviewed: allowScripts lists exactly the packages that have one", () => {
    const withScripts = [
      ...new Set(
        Object.entries(lock.packages)
          .filter(([, p]) => p.hasInstallScript)
          .map(([path]) => nameOf(path)),
      ),
    ].sort();
    expect(Object.keys(manifest.allowScripts).sort()).toEqual(withScripts);
    for (const name of withScripts) expect(installNotes).toContain(`\`${name}\``);
  });
});
