// What a request body may weigh on its way through Cloudflare: the zone's Maximum Upload Size, 100 MB
// on the Free and Pro plans, 200 MB on Business, up to 5 GB on Enterprise. A one-call upload is one
// request, so the whole file must fit; a resumable upload sends one request per part.

/** Cloudflare's smallest plan limit, so a client with no better knowledge stays under every zone's. */
export const CLOUDFLARE_BODY_LIMIT = 100_000_000;

/** Files above this go resumable by default: well under the limit, so a one-call upload always fits. */
export const DEFAULT_RESUMABLE_ABOVE = 64 * 1024 * 1024;

/** The multipart envelope around the file (boundary lines and part headers) stays under this. */
export const MULTIPART_OVERHEAD = 1024;
