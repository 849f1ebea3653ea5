import { invalid } from './errors.js'

/** A path the SDK gives (absolute, or relative to the workspace root) as an absolute sandbox path. */
export function resolveWorkspacePath(root: string, path: string | undefined): string {
  if (path === undefined || path === '' || path === '.') return root
  if (typeof path !== 'string' || path.includes('\0'))
    throw invalid('A sandbox path must be a string without NUL bytes.')
  const joined = path.startsWith('/') ? path : `${root.replace(/\/+$/, '')}/${path}`
  const parts: string[] = []
  for (const part of joined.split('/')) {
    if (part === '' || part === '.') continue
    if (part === '..') parts.pop()
    else parts.push(part)
  }
  return `/${parts.join('/')}`
}
