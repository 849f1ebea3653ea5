// The text a LangChain model reads for a sandbox tool's result: one `label: value` line per part that has
// something in it, the state notice first, an error as `error: <tool> failed: <why>`. The parts themselves
// (cut outputs, exit codes, file contents) were shaped by @sandkeep/agent.
type Parts = Record<string, unknown>

/** The model's text for the result of the tool `name`. */
export function renderResult(name: string, result: object): string {
  const parts = result as Parts
  const lines: string[] = []
  if (typeof parts.notice === 'string') lines.push(`notice: ${parts.notice}`)
  lines.push(body(name, parts))
  return lines.join('\n')
}

function body(name: string, parts: Parts): string {
  if (typeof parts.error === 'string' && !('stdout' in parts)) return `error: ${name} failed: ${parts.error}`
  if ('content' in parts) return String(parts.content)
  if ('entries' in parts) {
    const entries = parts.entries as Array<{ path: string }>
    return entries.length === 0 ? '(empty)' : entries.map((entry) => entry.path).join('\n')
  }
  if ('bytes' in parts) return `wrote ${String(parts.bytes)} bytes to ${String(parts.path)}`
  if ('url' in parts)
    return parts.listening === false ? `${parts.url}\nnote: ${parts.note}` : String(parts.url)
  if (parts.background === true) return `background: pid ${String(parts.pid)}\nnote: ${parts.note}`
  return labelled(parts)
}

/** The command or code cell's parts, in their order, empty ones left out. */
function labelled(parts: Parts): string {
  const lines: string[] = []
  for (const [label, value] of Object.entries(parts)) {
    if (label === 'notice' || value === null || value === undefined || value === '') continue
    if (label === 'outputs') lines.push(...outputLines(value as Parts[]))
    else lines.push(`${label}: ${String(value)}`)
  }
  return lines.length === 0 ? '(no output)' : lines.join('\n')
}

/** A code cell's rich outputs other than its result: their text, or a note for an image. */
function outputLines(outputs: Parts[]): string[] {
  return outputs.flatMap((output) => {
    if (output.main === true) return []
    if (typeof output.text === 'string') return [`output: ${output.text}`]
    if (output.image !== undefined) return ['output: (an image, not shown as text)']
    return typeof output.note === 'string' ? [`output: ${output.note}`] : []
  })
}
