// Counts the hand-written input checks: functions named check*, validate*, resolve* (declarations and
// `const x = (...) =>` arrows) in the non-test sources of each package, their lines, and the `throw`
// statements inside them. Reproducible figures for the "option checking" decision in docs/benchmarks.md.
// Usage: node scripts/count-option-checks.mjs [--files] (--files also lists each function).
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import ts from 'typescript'

const root = new URL('..', import.meta.url).pathname
const NAME = /^(check|validate|resolve)[A-Z0-9_]/
const listFiles = process.argv.includes('--files')

function sources(dir) {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !/\.test\.|test-support|\.d\.ts$/.test(e.name))
    .map((e) => join(e.parentPath, e.name))
}

function throwsIn(node) {
  let count = 0
  const visit = (child) => {
    if (ts.isThrowStatement(child)) count++
    ts.forEachChild(child, visit)
  }
  visit(node)
  return count
}

function checksIn(file) {
  const text = readFileSync(file, 'utf8')
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true)
  const found = []
  const lines = (node) =>
    sf.getLineAndCharacterOfPosition(node.getEnd()).line -
    sf.getLineAndCharacterOfPosition(node.getStart(sf)).line +
    1
  const visit = (node) => {
    let name
    let body
    if (ts.isFunctionDeclaration(node) && node.name && node.body) [name, body] = [node.name.text, node]
    else if (
      ts.isVariableDeclaration(node) &&
      ts.isIdentifier(node.name) &&
      node.initializer &&
      (ts.isArrowFunction(node.initializer) || ts.isFunctionExpression(node.initializer))
    )
      [name, body] = [node.name.text, node.initializer]
    else if (ts.isMethodDeclaration(node) && ts.isIdentifier(node.name) && node.body)
      [name, body] = [node.name.text, node]
    if (name && NAME.test(name)) {
      found.push({ name, lines: lines(body), throws: throwsIn(body) })
      return
    }
    ts.forEachChild(node, visit)
  }
  visit(sf)
  return found
}

const totals = { functions: 0, lines: 0, throws: 0 }
const rows = []
for (const pkg of readdirSync(join(root, 'packages')).sort()) {
  let src
  try {
    src = sources(join(root, 'packages', pkg, 'src'))
  } catch {
    continue
  }
  const row = { pkg, functions: 0, lines: 0, throws: 0 }
  for (const file of src) {
    for (const check of checksIn(file)) {
      row.functions++
      row.lines += check.lines
      row.throws += check.throws
      if (listFiles) console.log(`${relative(root, file)}\t${check.name}\t${check.lines}\t${check.throws}`)
    }
  }
  if (row.functions === 0) continue
  rows.push(row)
  for (const key of Object.keys(totals)) totals[key] += row[key]
}
console.log('package\tfunctions\tlines\tthrows')
for (const row of rows) console.log(`${row.pkg}\t${row.functions}\t${row.lines}\t${row.throws}`)
console.log(`all\t${totals.functions}\t${totals.lines}\t${totals.throws}`)
