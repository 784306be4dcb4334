// The runner's client of the worker's internal API. Transient trouble (unreachable, 5xx, 429,
// timeouts) is retried with backoff; a lost lease (409) is its own error so a job can stop at once.
import { isRetryableFault, type JobFault } from "../../schema/db.ts";
import { leasedJob, type LeasedJob } from "../../schema/internal-api.ts";
import { type ByteSource, httpRangeSource } from "../../common/decode/byte-source.ts";
import type { RunnerConfig } from "./config.ts";
import { TransientError, withRetry } from "../../common/retry.ts";

export class LeaseLostError extends Error {}

/** A signed URL's download answered with an error status (404: the object is gone, or was replaced). */
export class DownloadRefusedError extends Error {
  readonly status: number;
  constructor(status: number, detail: string) {
    super(`download refused (${status}): ${detail}`);
    this.status = status;
  }
}

/** A download larger than the caller's limit, stopped before it was read whole. */
export class DownloadTooLargeError extends Error {
  readonly size: number | null;
  readonly limit: number;
  constructor(size: number | null, limit: number) {
    super(size === null ? `download is larger than ${limit} bytes` : `download is ${size} bytes, more than ${limit}`);
    this.size = size;
    this.limit = limit;
  }
}

const REQUEST_TIMEOUT_MS = 60_000;

export interface InternalApi {
  /** Long-polls for a job; `signal` abandons the wait (and its retries), e.g. on shutdown. */
  lease(waitSeconds: number, signal?: AbortSignal): Promise<LeasedJob | null>;
  heartbeat(job: LeasedJob, progress: number, stage: string): Promise<void>;
  urls(job: LeasedJob): Promise<LeasedJob>;
  complete(job: LeasedJob, result: unknown): Promise<void>;
  /** Reports whose fault the failure is; the worker decides from it whether to try again. */
  fail(job: LeasedJob, reason: string, fault: JobFault): Promise<void>;
  /** Hands back a job never started, without spending one of its attempts. */
  release(job: LeasedJob): Promise<void>;
  /** Reads a whole file; past `maxBytes` it stops reading and throws DownloadTooLargeError. */
  download(url: string, maxBytes?: number): Promise<Uint8Array>;
  /** A file read by HTTP range requests, a part at a time (never whole), each read retried like a download. */
  /**
   * The object at a signed URL as a ByteSource read by range requests. Signed URLs expire (15
   * minutes) long before a whole slide is read: a read answered 403 asks `renew` for a fresh URL
   * (the job's, from POST /jobs/{id}/urls) and is sent again with it.
   */
  rangeSource(url: string, renew?: () => Promise<string>): Promise<ByteSource>;
  /** PUTs the bytes (a Blob of parts is sent without joining them into one buffer). */
  upload(url: string, bytes: Uint8Array | Blob): Promise<void>;
}

async function send(url: string, init: RequestInit, timeoutMs = REQUEST_TIMEOUT_MS, cancel?: AbortSignal): Promise<Response> {
  let response: Response;
  try {
    const timeout = AbortSignal.timeout(timeoutMs);
    response = await fetch(url, { ...init, signal: cancel ? AbortSignal.any([timeout, cancel]) : timeout });
  } catch (error) {
    if (cancel?.aborted) throw error;
    throw new TransientError(`${init.method ?? "GET"} ${new URL(url).pathname}: ${(error as Error).message}`);
  }
  if (response.status >= 500 || response.status === 429) {
    throw new TransientError(`${init.method ?? "GET"} ${new URL(url).pathname}: ${response.status} ${(await response.text()).slice(0, 200)}`);
  }
  return response;
}

async function detail(response: Response): Promise<string> {
  const text = await response.text();
  try {
    const parsed = JSON.parse(text) as { detail?: unknown };
    return typeof parsed.detail === "string" ? parsed.detail : JSON.stringify(parsed.detail ?? parsed);
  } catch {
    return text.slice(0, 300);
  }
}

export function internalApi(config: RunnerConfig, log: (m: string) => void = console.error): InternalApi {
  const retry = <T>(what: string, operation: () => Promise<T>, signal?: AbortSignal) =>
    withRetry(operation, {
      attempts: 8,
      baseMs: 250,
      maxMs: 15_000,
      signal,
      onRetry: (error, attempt, waitMs) => log(`[runner] ${what}: ${(error as Error).message}; retry ${attempt} in ${Math.round(waitMs)} ms`),
    });

  const post = (path: string, body: unknown, timeoutMs?: number, cancel?: AbortSignal) =>
    send(
      `${config.workerUrl}/api/v1/internal${path}`,
      {
        method: "POST",
        headers: { Authorization: `Bearer ${config.runnerToken}`, "Content-Type": "application/json" },
        body: JSON.stringify(body),
      },
      timeoutMs,
      cancel,
    );

  const jobCall = async (what: string, job: LeasedJob, path: string, body: Record<string, unknown>) =>
    retry(what, async () => {
      const response = await post(`/jobs/${job.job_id}/${path}`, { lease_token: job.lease_token, ...body });
      if (response.status === 409) throw new LeaseLostError(await detail(response));
      if (!response.ok) throw new Error(`${what} refused (${response.status}): ${await detail(response)}`);
      return response;
    });

  return {
    async lease(waitSeconds, signal) {
      return retry(
        "lease",
        async () => {
          const body = { runner_id: config.runnerId, wait_seconds: waitSeconds, lease_seconds: config.leaseSeconds };
          const response = await post("/jobs/lease", body, (waitSeconds + 30) * 1000, signal);
          if (response.status === 204) return null;
          if (!response.ok) throw new Error(`lease refused (${response.status}): ${await detail(response)}`);
          return leasedJob.parse(await response.json());
        },
        signal,
      );
    },
    async heartbeat(job, progress, stage) {
      await jobCall("heartbeat", job, "heartbeat", { progress, stage, lease_seconds: config.leaseSeconds });
    },
    async urls(job) {
      return leasedJob.parse(await (await jobCall("urls", job, "urls", {})).json());
    },
    async complete(job, result) {
      await jobCall("complete", job, "complete", { result });
    },
    async fail(job, reason, fault) {
      // `retryable` too, for workers that predate `fault`.
      await jobCall("fail", job, "fail", { reason: reason.slice(0, 2000), fault, retryable: isRetryableFault(fault) });
    },
    async release(job) {
      await jobCall("release", job, "release", {});
    },
    async download(url, maxBytes = Number.POSITIVE_INFINITY) {
      return retry("download", async () => {
        const response = await send(url, { method: "GET" });
        if (!response.ok) throw new DownloadRefusedError(response.status, await detail(response));
        return readBounded(response, maxBytes);
      });
    },
    async rangeSource(url, renew) {
      const size = await retry("image size", async () => {
        const response = await send(url, { method: "GET", headers: { Range: "bytes=0-0" } });
        await response.body?.cancel().catch(() => {});
        const total = /\/(\d+)$/.exec(response.headers.get("content-range") ?? "")?.[1];
        if (response.status !== 206 || total === undefined) throw new Error(`range request refused (${response.status}): the image cannot be read in parts`);
        return Number(total);
      });
      let current = url;
      /** One renewal at a time: reads that meet the expiry together wait for the same fresh URL. */
      let renewing: Promise<string> | null = null;
      const fetchRange = async (_input: unknown, init?: RequestInit) => {
        const used = current;
        const response = await send(used, init ?? {});
        if (response.status !== 403 || !renew) return response;
        await response.body?.cancel().catch(() => {});
        if (current === used) {
          renewing ??= renew().finally(() => {
            renewing = null;
          });
          current = await renewing;
        }
        return send(current, init ?? {});
      };
      const source = httpRangeSource(url, size, fetchRange);
      return { size, read: (offset, length) => retry("image read", () => source.read(offset, length)) };
    },
    async upload(url, bytes) {
      await retry("upload", async () => {
        const length = bytes instanceof Blob ? bytes.size : bytes.length;
        const response = await send(url, { method: "PUT", body: bytes, headers: { "Content-Length": String(length) } });
        // The worker refuses an output of an attempt whose lease ran out: the job is someone else's now.
        if (response.status === 409) throw new LeaseLostError(await detail(response));
        if (!response.ok) throw new Error(`upload refused (${response.status}): ${await detail(response)}`);
      });
    },
  };
}

/** The body, refused from its Content-Length when that says too much, else cut off once past `maxBytes`. */
async function readBounded(response: Response, maxBytes: number): Promise<Uint8Array> {
  const declared = Number(response.headers.get("Content-Length") ?? NaN);
  if (declared > maxBytes) {
    await response.body?.cancel();
    throw new DownloadTooLargeError(declared, maxBytes);
  }
  if (!response.body) return new Uint8Array(0);
  const chunks: Uint8Array[] = [];
  let length = 0;
  for await (const chunk of response.body) {
    length += chunk.length;
    if (length > maxBytes) {
      await response.body.cancel().catch(() => undefined);
      throw new DownloadTooLargeError(Number.isFinite(declared) ? declared : null, maxBytes);
    }
    chunks.push(chunk);
  }
  const out = new Uint8Array(length);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.length;
  }
  return out;
}
