// The client's one way to talk to the service. Transient trouble (unreachable, timeouts, 5xx, 429)
// is retried with exponential backoff and full jitter (the runner's retry rule, reused); anything
// else comes back as an ApiError carrying the status and the service's `detail`. The key travels
// only in the Authorization header of API requests: never on signed part URLs, never in a message.
import { TransientError, withRetry } from "../common/retry.ts";
import { inClientWords } from "./api-words.ts";

/** A refusal of the service; its `detail` names the client's flags, not the API's fields (api-words.ts). */
export class ApiError extends Error {
  readonly status: number;
  readonly detail: string;
  constructor(what: string, status: number, detail: string) {
    const words = inClientWords(detail);
    super(`${what}: ${status} ${words}`);
    this.status = status;
    this.detail = words;
  }
}

interface RetryPolicy {
  attempts: number;
  baseMs: number;
  maxMs: number;
}

const DEFAULT_RETRY: RetryPolicy = { attempts: 6, baseMs: 500, maxMs: 20_000 };

export interface HttpOptions {
  /** Base address including /api/v1. */
  api: string;
  key: string;
  /** Injected in tests to fail chosen requests; the global fetch otherwise. */
  fetch?: typeof fetch;
  retry?: RetryPolicy;
  timeoutMs?: number;
  log?: (message: string) => void;
}

interface RequestOptions {
  json?: unknown;
  query?: Record<string, string | number | undefined>;
  /** A body built afresh for each attempt (a stream cannot be replayed). */
  body?: () => { body: NonNullable<RequestInit["body"]>; headers: Record<string, string> };
  /** An unauthenticated request to a signed URL outside the API. */
  signed?: boolean;
}

/** The service's `detail` (a string, or the 422 array summarised), else the start of the body. */
async function detailOf(response: Response): Promise<string> {
  const text = await response.text();
  try {
    const { detail } = JSON.parse(text) as { detail?: unknown };
    if (typeof detail === "string") return detail;
    if (Array.isArray(detail)) return detail.map((d: { loc?: unknown[]; msg?: string }) => `${(d.loc ?? []).join(".")}: ${d.msg}`).join("; ");
  } catch {
    // not JSON: fall through to the raw text
  }
  return text.slice(0, 300);
}

export class Http {
  readonly api: string;
  readonly origin: string;
  private readonly key: string;
  private readonly fetch: typeof fetch;
  private readonly retry: RetryPolicy;
  private readonly timeoutMs: number;
  private readonly log: (message: string) => void;

  constructor(options: HttpOptions) {
    this.api = options.api.replace(/\/+$/, "");
    this.origin = new URL(this.api).origin;
    this.key = options.key;
    this.fetch = options.fetch ?? fetch;
    this.retry = options.retry ?? DEFAULT_RETRY;
    this.timeoutMs = options.timeoutMs ?? 10 * 60_000;
    this.log = options.log ?? (() => undefined);
  }

  /** Sends with retries; answers the response of a 2xx, throws ApiError for any other status. */
  async request(method: string, pathOrUrl: string, options: RequestOptions = {}): Promise<Response> {
    const url = options.signed ? pathOrUrl : this.url(pathOrUrl, options.query);
    const what = `${method} ${options.signed ? "part URL" : pathOrUrl.split("?")[0]}`;
    return withRetry(
      async () => {
        const headers: Record<string, string> = options.signed ? {} : { Authorization: `Bearer ${this.key}` };
        let body: NonNullable<RequestInit["body"]> | undefined;
        if (options.json !== undefined) {
          body = JSON.stringify(options.json);
          headers["Content-Type"] = "application/json";
        } else if (options.body) {
          const built = options.body();
          body = built.body;
          Object.assign(headers, built.headers);
        }
        let response: Response;
        try {
          const init: RequestInit & { duplex?: "half" } = { method, headers, body, signal: AbortSignal.timeout(this.timeoutMs) };
          if (body instanceof ReadableStream) init.duplex = "half";
          response = await this.fetch(url, init);
        } catch (error) {
          // "fetch failed" alone does not say where: name the address and the system's reason
          // (ECONNREFUSED, ENOTFOUND...). A signed URL is named by its origin, its query is a secret.
          const cause = (error as { cause?: { code?: string } }).cause?.code;
          const address = options.signed ? new URL(url).origin : url.split("?")[0];
          throw new TransientError(`${what}: ${(error as Error).message}${cause ? ` (${cause})` : ""} at ${address}`);
        }
        if (response.status >= 500 || response.status === 429) throw new TransientError(`${what}: ${response.status} ${await detailOf(response)}`);
        if (!response.ok) throw new ApiError(what, response.status, await detailOf(response));
        return response;
      },
      { ...this.retry, onRetry: (error, attempt, waitMs) => this.log(`${(error as Error).message}; retry ${attempt} in ${(waitMs / 1000).toFixed(1)} s`) },
    );
  }

  async json<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    const response = await this.request(method, path, options);
    const text = await response.text();
    return (text ? JSON.parse(text) : {}) as T;
  }

  private url(path: string, query: RequestOptions["query"] = {}): string {
    const url = new URL(this.api + path);
    for (const [name, value] of Object.entries(query)) if (value !== undefined) url.searchParams.set(name, String(value));
    return url.toString();
  }
}
