#!/usr/bin/env node
// Fails when the source files of a package import each other in a circle.
//   node scripts/check-import-cycles.mjs            every packages/*/src
//   node scripts/check-import-cycles.mjs <dir>...   only these directories (each read as one source tree)
// A circle means no file of it can be read, tested or changed on its own; `pnpm check` runs this. Every
// relative import counts: static and dynamic, `export ... from`, and type-only ones (a type circle ties the
// files together just as much). Node built-ins only, so it runs before anything is installed.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const SOURCE = /\.(?:ts|tsx|mts|js|mjs)$/
// `import … from '…'`, `export … from '…'`, `import '…'`, `import('…')` (also in type positions).
const SPECIFIERS = [
  /\b(?:import|export)\s[^'"`;]*?\sfrom\s*['"]([^'"]+)['"]/g,
  /\bimport\s*['"]([^'"]+)['"]/g,
  /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
]

function sourceDirectories(args) {
  if (args.length > 0) return args.map((dir) => resolve(dir))
  const packages = join(root, 'packages')
  return readdirSync(packages)
    .map((name) => join(packages, name, 'src'))
    .filter((dir) => existsSync(dir))
}

function listFiles(dir) {
  const files = []
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) {
      if (entry.name !== 'node_modules' && entry.name !== 'dist') files.push(...listFiles(path))
    } else if (SOURCE.test(entry.name) && !entry.name.endsWith('.d.ts')) files.push(path)
  }
  return files
}

/** Comments removed (strings kept), so an import named in a comment is not read as one. */
function withoutComments(text) {
  return text.replace(/\/\*[\s\S]*?\*\/|(^|[^:'"`\\])\/\/[^\n]*/g, (_match, before = '') => before)
}

/** The file a relative specifier names: `./x.js` is `./x.ts` in the sources, a directory its index. */
function resolveSpecifier(from, specifier, known) {
  const base = resolve(dirname(from), specifier)
  const stem = base.replace(/\.(?:js|mjs|ts|mts)$/, '')
  const candidates = [base, `${stem}.ts`, `${stem}.tsx`, `${stem}.mts`, `${stem}.js`, `${stem}.mjs`]
  for (const candidate of candidates) if (known.has(candidate)) return candidate
  if (existsSync(base) && statSync(base).isDirectory()) {
    for (const index of ['index.ts', 'index.js', 'index.mjs']) {
      if (known.has(join(base, index))) return join(base, index)
    }
  }
  return undefined
}

function importGraph(files) {
  const known = new Set(files)
  const graph = new Map()
  for (const file of files) {
    const text = withoutComments(readFileSync(file, 'utf8'))
    const targets = new Set()
    for (const pattern of SPECIFIERS) {
      for (const match of text.matchAll(pattern)) {
        const specifier = match[1]
        if (!specifier.startsWith('.')) continue
        const target = resolveSpecifier(file, specifier, known)
        if (target && target !== file) targets.add(target)
      }
    }
    graph.set(file, [...targets].sort())
  }
  return graph
}

/** Strongly connected components of more than one file (Tarjan's algorithm, iterative). */
function circles(graph) {
  let next = 0
  const index = new Map()
  const low = new Map()
  const stack = []
  const onStack = new Set()
  const found = []
  for (const start of graph.keys()) {
    if (index.has(start)) continue
    const work = [{ node: start, edge: 0 }]
    index.set(start, next)
    low.set(start, next++)
    stack.push(start)
    onStack.add(start)
    while (work.length > 0) {
      const frame = work.at(-1)
      const edges = graph.get(frame.node)
      if (frame.edge < edges.length) {
        const target = edges[frame.edge++]
        if (!index.has(target)) {
          index.set(target, next)
          low.set(target, next++)
          stack.push(target)
          onStack.add(target)
          work.push({ node: target, edge: 0 })
        } else if (onStack.has(target)) {
          low.set(frame.node, Math.min(low.get(frame.node), index.get(target)))
        }
        continue
      }
      work.pop()
      const parent = work.at(-1)
      if (parent) low.set(parent.node, Math.min(low.get(parent.node), low.get(frame.node)))
      if (low.get(frame.node) !== index.get(frame.node)) continue
      const component = []
      let member
      do {
        member = stack.pop()
        onStack.delete(member)
        component.push(member)
      } while (member !== frame.node)
      if (component.length > 1) found.push(component.sort())
    }
  }
  return found
}

/** One shortest path around a component, from its first file back to it, to show how the circle closes. */
function loopThrough(component, graph) {
  const members = new Set(component)
  const start = component[0]
  const previous = new Map([[start, null]])
  const queue = [start]
  while (queue.length > 0) {
    const node = queue.shift()
    for (const target of graph.get(node)) {
      if (!members.has(target)) continue
      if (target === start) {
        const path = [start]
        for (let at = node; at !== start; at = previous.get(at)) path.splice(1, 0, at)
        return [...path, start]
      }
      if (!previous.has(target)) {
        previous.set(target, node)
        queue.push(target)
      }
    }
  }
  return component
}

const directories = sourceDirectories(process.argv.slice(2))
let failures = 0
let fileCount = 0
for (const dir of directories) {
  const graph = importGraph(listFiles(dir))
  fileCount += graph.size
  for (const component of circles(graph)) {
    failures++
    const show = (file) => relative(root, file)
    console.error(`import circle of ${component.length} files in ${show(dir)}:`)
    console.error(`  ${loopThrough(component, graph).map(show).join('\n    → ')}`)
    const rest = component.filter((file) => !loopThrough(component, graph).includes(file))
    if (rest.length > 0) console.error(`  also in it: ${rest.map(show).join(', ')}`)
  }
}
if (failures > 0) {
  console.error(
    `check-import-cycles: ${failures} import circle(s); break each by moving what both sides need below them.`,
  )
  process.exit(1)
}
console.log(
  `check-import-cycles: no import circle in ${fileCount} files of ${directories.length} source trees.`,
)
