// Synthetic nuclei on a regular grid with known centres, for the end-to-end tests and benches.

/** Where the synthetic nuclei sit: rows `spacing` apart, every other row shifted a little. */
export function nucleusCentres(width: number, height: number, spacing = 40, radius = 11): [number, number][] {
  const centres: [number, number][] = [];
  for (let cy = spacing / 2; cy + radius < height; cy += spacing) {
    for (let cx = spacing / 2 + ((cy / spacing) % 2) * 6; cx + radius < width; cx += spacing) centres.push([cx, cy]);
  }
  return centres;
}

/** A 16-bit fluorescence-like image: bright round nuclei with soft edges on a dim background. */
export function syntheticNuclei(width: number, height: number, spacing = 40, radius = 11): { data: Uint16Array; count: number } {
  const data = new Uint16Array(width * height).fill(300);
  const centres = nucleusCentres(width, height, spacing, radius);
  for (const [cx, cy] of centres) {
    for (let y = Math.floor(cy - radius - 2); y <= cy + radius + 2; y++) {
      for (let x = Math.floor(cx - radius - 2); x <= cx + radius + 2; x++) {
        const d = Math.hypot(x + 0.5 - cx, y + 0.5 - cy);
        const v = 3000 / (1 + Math.exp((d - radius) * 1.5));
        data[y * width + x] = Math.max(data[y * width + x], Math.round(300 + v));
      }
    }
  }
  return { data, count: centres.length };
}

/** The nuclei's label image (0 = background, nucleus i = i + 1), as a person's corrected segmentation would be. */
export function syntheticNucleiLabels(width: number, height: number, spacing = 40, radius = 11): Uint16Array {
  const labels = new Uint16Array(width * height);
  for (const [i, [cx, cy]] of nucleusCentres(width, height, spacing, radius).entries()) {
    for (let y = Math.floor(cy - radius); y <= cy + radius; y++) {
      for (let x = Math.floor(cx - radius); x <= cx + radius; x++) {
        if (Math.hypot(x + 0.5 - cx, y + 0.5 - cy) <= radius) labels[y * width + x] = i + 1;
      }
    }
  }
  return labels;
}

/** JSON calls to a running local stack with its organization's key; a non-2xx answer throws with its body. */
export function stackClient(stack: () => { api: string; key: string }) {
  async function api<T = Record<string, unknown>>(path: string, init: RequestInit = {}): Promise<T> {
    const { api: base, key } = stack();
    const response = await fetch(base + path, { ...init, headers: { Authorization: `Bearer ${key}`, ...init.headers } });
    const text = await response.text();
    if (!response.ok) throw new Error(`${init.method ?? "GET"} ${path}: ${response.status} ${text}`);
    return (text ? JSON.parse(text) : {}) as T;
  }
  const postJson = <T = Record<string, unknown>>(path: string, body: unknown) =>
    api<T>(path, { method: "POST", body: JSON.stringify(body), headers: { "Content-Type": "application/json" } });
  return { api, postJson };
}
