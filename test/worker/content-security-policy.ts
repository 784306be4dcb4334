// Reads a Content-Security-Policy header into its directives, so tests state what each allows.
export function directivesOf(policy: string | null): Record<string, string[]> {
  if (!policy) throw new Error("the response has no Content-Security-Policy");
  const directives: Record<string, string[]> = {};
  for (const part of policy.split(";")) {
    const [name, ...sources] = part.trim().split(/\s+/);
    if (name) directives[name] = sources;
  }
  return directives;
}
