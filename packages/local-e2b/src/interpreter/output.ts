// How kernel output becomes the NDJSON lines of E2B's `/execute`: a mime bundle as a `result` line.

/** What the upstream server does to `text/plain`: a quoted string repr is shown without its quotes. */
function plainText(text: string): string {
  if (
    text.length >= 2 &&
    ((text.startsWith("'") && text.endsWith("'")) || (text.startsWith('"') && text.endsWith('"')))
  ) {
    return text.slice(1, -1)
  }
  return text
}

const MIME_FIELDS: Record<string, string> = {
  'text/html': 'html',
  'text/markdown': 'markdown',
  'image/svg+xml': 'svg',
  'image/png': 'png',
  'image/jpeg': 'jpeg',
  'application/pdf': 'pdf',
  'text/latex': 'latex',
  'application/json': 'json',
  'application/javascript': 'javascript',
  'e2b/data': 'data',
  'e2b/chart': 'chart',
}

/** A kernel's mime bundle as the `result` line of `/execute`. */
export function resultLine(data: Record<string, unknown>, main: boolean): Record<string, unknown> {
  const line: Record<string, unknown> = { type: 'result' }
  const extra: Record<string, unknown> = {}
  for (const [mime, value] of Object.entries(data)) {
    if (mime === 'text/plain') {
      if (typeof value === 'string') line.text = plainText(value)
    } else if (MIME_FIELDS[mime]) {
      line[MIME_FIELDS[mime]] = value
    } else {
      extra[mime] = value
    }
  }
  if (Object.keys(extra).length > 0) line.extra = extra
  line.is_main_result = main
  return line
}
