// Layout checks for the dashboard in a browser, by measuring the page (dashboard.test.ts runs them
// at the window sizes people use, on its stack): text that must stay on one line (status badges,
// model names, buttons), a page wider than the window, and controls that must be in sight without
// scrolling (the viewer's "Edit cells" and "Save corrections").
import type { Page } from "playwright-core";

/** The window sizes the dashboard must hold at. */
export const WINDOW_SIZES = [
  { width: 1280, height: 800 },
  { width: 1400, height: 900 },
  { width: 1920, height: 1080 },
] as const;

/** Badges, model names and ids, and buttons: words that must not break across lines. */
export const ONE_LINE = ".badge, td.model strong, td.model .mono, td.model:not(:has(*)), button, .button";

// Code that runs in the page, kept as text: these files are type-checked against Node's types, not the DOM's.
/**
 * What breaks the layout on the page now: each shown element (of `selector`) whose text lies on
 * more than one line, told by the line boxes of its text; and the page being wider than the window.
 */
const LAYOUT_PROBLEMS = `(selector) => {
  const lines = (element) => {
    const range = document.createRange();
    range.selectNodeContents(element);
    return new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top))).size;
  };
  const problems = [];
  for (const element of document.querySelectorAll(selector)) {
    if (element.offsetParent === null) continue; // not shown
    const n = lines(element);
    if (n > 1) problems.push(\`"\${element.textContent.trim()}" (\${element.className || element.tagName.toLowerCase()}) on \${n} lines\`);
  }
  const overflow = document.documentElement.scrollWidth - window.innerWidth;
  if (overflow > 0) problems.push(\`the page is \${overflow} px wider than the window\`);
  return problems;
}`;

/**
 * Where an element is: whether it is shown whole, inside the window and inside every box around it
 * that clips what it holds (the viewer's sidebar scrolls), with nothing scrolled.
 */
const IN_SIGHT = `(selector) => {
  const element = document.querySelector(selector);
  const box = element.getBoundingClientRect();
  let [top, bottom] = [0, window.innerHeight];
  let scrolled = window.scrollY;
  for (let parent = element.parentElement; parent; parent = parent.parentElement) {
    if (getComputedStyle(parent).overflowY === "visible") continue;
    const clip = parent.getBoundingClientRect();
    top = Math.max(top, clip.top);
    bottom = Math.min(bottom, clip.bottom);
    scrolled += parent.scrollTop;
  }
  const visible = element.offsetParent !== null;
  return { visible, top: Math.round(box.top), bottom: Math.round(box.bottom), clip: [Math.round(top), Math.round(bottom)], scrolled, inSight: visible && box.top >= top && box.bottom <= bottom && scrolled === 0 };
}`;

/** The page's layout problems: text of `selector` on several lines, a page wider than the window. */
export const layoutProblems = (page: Page, selector = ONE_LINE) => page.evaluate<string[]>(`(${LAYOUT_PROBLEMS})(${JSON.stringify(selector)})`);

export interface Sight {
  visible: boolean;
  top: number;
  bottom: number;
  /** The part of the window the element may be seen in: the window less what boxes around it clip. */
  clip: [number, number];
  /** Pixels scrolled, of the page and of the boxes around the element. */
  scrolled: number;
  inSight: boolean;
}

/** Whether the element of `selector` is in sight whole without scrolling anything, and where. */
export const inSight = (page: Page, selector: string) => page.evaluate<Sight>(`(${IN_SIGHT})(${JSON.stringify(selector)})`);
