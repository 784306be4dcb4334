// The load bench's requests: each one timed and kept, by route kind, for the report.
export const REQUEST_TIMEOUT_MS = 60_000;

interface Sample {
  kind: string;
  /** 0: no answer (connection error or timeout). */
  status: number;
  ms: number;
}
export const samples: Sample[] = [];

export async function timed(kind: string, url: string, init: RequestInit = {}): Promise<{ status: number; body: unknown }> {
  const start = performance.now();
  try {
    const response = await fetch(url, { ...init, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    const type = response.headers.get("Content-Type") ?? "";
    const body = type.includes("json") && !url.includes("/export/") ? await response.json().catch(() => null) : await response.arrayBuffer();
    samples.push({ kind, status: response.status, ms: performance.now() - start });
    return { status: response.status, body };
  } catch (error) {
    samples.push({ kind, status: 0, ms: performance.now() - start });
    return { status: 0, body: String(error) };
  }
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;

/** Requests/s, then count, p50/p99 latency and statuses per route kind, then all statuses. */
export function report(seconds: number): string[] {
  const lines: string[] = [];
  const kinds = [...new Set(samples.map((s) => s.kind))].sort();
  lines.push(`${samples.length} requests in ${seconds.toFixed(1)} s = ${(samples.length / seconds).toFixed(1)} requests/s`);
  lines.push("route kind                 count   p50 ms   p99 ms   statuses");
  for (const kind of kinds) {
    const of = samples.filter((s) => s.kind === kind);
    const ms = of.map((s) => s.ms).sort((a, b) => a - b);
    const statuses = countBy(of.map((s) => s.status));
    lines.push(
      `${kind.padEnd(25)} ${String(of.length).padStart(6)} ${percentile(ms, 50).toFixed(0).padStart(8)} ${percentile(ms, 99).toFixed(0).padStart(8)}   ${statuses}`,
    );
  }
  lines.push(`responses by status: ${countBy(samples.map((s) => s.status))}`);
  return lines;
}

export function countBy(xs: number[]): string {
  const counts = new Map<number, number>();
  for (const x of xs) counts.set(x, (counts.get(x) ?? 0) + 1);
  return [...counts]
    .sort(([a], [b]) => a - b)
    .map(([k, n]) => `${k === 0 ? "no answer" : k}: ${n}`)
    .join(", ");
}
