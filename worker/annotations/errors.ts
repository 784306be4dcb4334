// Why an annotation file was refused. Every parser throws only this, with a detail that names the
// problem in the user's terms; the route turns `kind` into the HTTP status with `importErrorStatus`.

type AnnotationErrorKind =
  /** Not a format we import (by content, never by file name). */
  | "unsupported_type"
  /** A format we import, but broken: truncated, corrupt, not parseable. */
  | "unreadable"
  /** A label image whose width or height differs from the image's. */
  | "wrong_size"
  /** Readable, but no object inside the image. */
  | "no_objects"
  /** More objects than MAX_IMPORT_OBJECTS. */
  | "too_many_objects"
  /** Over a size limit (file, archive, vertices, nesting) or coordinates far outside the image. */
  | "limit_exceeded"
  /** Readable, but holds something that is not an area outline (a line, a point, a composite ROI). */
  | "invalid_content";

export class AnnotationImportError extends Error {
  readonly kind: AnnotationErrorKind;
  constructor(kind: AnnotationErrorKind, detail: string) {
    super(detail);
    this.name = "AnnotationImportError";
    this.kind = kind;
  }
}

/** 415 for files we cannot read as an annotation at all, 422 for readable ones we refuse. */
export function importErrorStatus(kind: AnnotationErrorKind): 415 | 422 {
  return kind === "unsupported_type" || kind === "unreadable" ? 415 : 422;
}
