/**
 * Quotes a string for a POSIX shell (bash, sh) so it is always exactly one word, whatever it contains:
 * single quotes around it, each `'` inside written as `'\''`.
 */
export function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`
}
