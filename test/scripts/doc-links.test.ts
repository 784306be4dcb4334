// Every relative link of the documentation resolves: README.md, docs/**/*.md and the READMEs beside
// the code. A link's file must exist; a `#anchor` into a markdown file must name one of its
// headings, by GitHub's rule for heading ids. Links inside code (fenced blocks, `inline`) are text,
// not links, and web addresses are not followed. A broken link is reported as "file: target".
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");
/** Folders whose markdown files are documentation: all of docs/, and the READMEs in the code's folders. */
const README_FOLDERS = ["worker", "gpu-runner", "client", "common", "schema", "scripts", "bench", "test"];

function markdownFiles(dir: string, onlyReadmes: boolean): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === "node_modules" || entry.name.startsWith(".") ? [] : markdownFiles(path, onlyReadmes);
    return entry.name.endsWith(".md") && (!onlyReadmes || entry.name === "README.md") ? [path] : [];
  });
}

/** The text outside fenced code blocks and inline code spans. */
function prose(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[ \t]*$/gm, "").replace(/`[^`\n]*`/g, "");
}

/** The link targets of a markdown text: `[text](target)` and `![alt](target)`, titles dropped. */
function linkTargets(markdown: string): string[] {
  return [...prose(markdown).matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((match) => match[1]!);
}

/** GitHub's id for a heading: lowercase, punctuation other than hyphens and spaces dropped, spaces to hyphens. */
function slug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "").replace(/ /g, "-");
}

/** The ids of a markdown file's headings, a repeated one numbered as GitHub does (`x`, `x-1`, ...). */
function headingIds(markdown: string): Set<string> {
  const ids = new Set<string>();
  const seen = new Map<string, number>();
  const withoutFences = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[ \t]*$/gm, "");
  for (const match of withoutFences.matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)) {
    const base = slug(match[1]!);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    ids.add(count === 0 ? base : `${base}-${count}`);
  }
  return ids;
}

function brokenLinks(file: string): string[] {
  const markdown = readFileSync(file, "utf8");
  const broken: string[] = [];
  for (const target of linkTargets(markdown)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto: and the like
    const [pathPart, anchor] = target.split("#", 2) as [string, string | undefined];
    const path = pathPart === "" ? file : resolve(dirname(file), decodeURIComponent(pathPart));
    if (!existsSync(path)) {
      broken.push(`${relative(ROOT, file)}: ${target} (no such file)`);
      continue;
    }
    if (anchor === undefined || !path.endsWith(".md") || statSync(path).isDirectory()) continue;
    if (!headingIds(readFileSync(path, "utf8")).has(decodeURIComponent(anchor).toLowerCase())) {
      broken.push(`${relative(ROOT, file)}: ${target} (no heading with that id)`);
    }
  }
  return broken;
}

const files = [
  join(ROOT, "README.md"),
  ...markdownFiles(join(ROOT, "docs"), false),
  ...README_FOLDERS.flatMap((folder) => markdownFiles(join(ROOT, folder), true)),
];

describe("the documentation's links", () => {
  it("reads README.md, docs/ and the code's READMEs", () => {
    const names = files.map((file) => relative(ROOT, file));
    expect(names).toContain("README.md");
    expect(names).toContain("docs/api.md");
    expect(names).toContain("gpu-runner/engine/README.md");
  });

  it("makes heading ids as GitHub does", () => {
    expect(slug("The public models: `cpsam` and `cpsam-large`")).toBe("the-public-models-cpsam-and-cpsam-large");
    expect(slug("The runner's API")).toBe("the-runners-api");
    expect(slug("bench:big-service")).toBe("benchbig-service");
    expect(slug("`masks.tif`")).toBe("maskstif");
    expect(slug("Images of any size (tiled, BigTIFF)")).toBe("images-of-any-size-tiled-bigtiff");
    expect([...headingIds("# A\n## A\n```\n# not a heading\n```\n## A\n")]).toEqual(["a", "a-1", "a-2"]);
    expect(linkTargets('[x](a.md#b) `[y](c.md)` ![z](d.png "title")\n```\n[w](e.md)\n```\n')).toEqual(["a.md#b", "d.png"]);
  });

  it("resolves every relative link to a file, and every #anchor into markdown to a heading", () => {
    expect(files.flatMap(brokenLinks)).toEqual([]);
  });
});
