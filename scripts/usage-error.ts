// A mistake the person at the admin CLI fixes (a missing argument, a missing credential): the CLI
// prints its message as `error: ...`, without a stack trace.
export class UsageError extends Error {}
