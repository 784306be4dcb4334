// Whose fault an engine failure is, as a type, so the runner tells the worker whether another
// attempt can help without reading message text (schema/db.ts JOB_FAULTS).

/** The input (image, labels, parameters) cannot be processed as asked, by any runner. */
export class InputError extends Error {
  readonly fault = "input" as const;
}

/** The model cannot be loaded or run (a broken manifest or graph), by any runner. */
export class ModelError extends Error {
  readonly fault = "model" as const;
}
