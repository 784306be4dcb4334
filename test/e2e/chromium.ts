// The browser every browser test drives: Debian's chromium through playwright-core (playwright's
// own browser downloads cannot be fetched on these machines), headless, in a fresh profile, with
// nothing of its own reaching the network (updates, sync, background fetches).
import { type BrowserContext, chromium, type Page } from "playwright-core";

const CHROMIUM = "/usr/bin/chromium";

const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export function launchChromium(
  profile: string,
  options: { viewport?: { width: number; height: number }; acceptDownloads?: boolean } = {},
): Promise<BrowserContext> {
  return chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: ARGS, ...options });
}

/** Collects a page's script errors and logged errors (not failed resource loads) into `errors`, which each test's afterEach expects empty. */
export function collectPageErrors(page: Page, errors: string[]): void {
  page.on("pageerror", (error) => errors.push(error.message));
  page.on("console", (message) => message.type() === "error" && !message.text().startsWith("Failed to load resource") && errors.push(message.text()));
}
