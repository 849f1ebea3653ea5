// The mock's very small interpreter: assignments, names, literals, `+`, print(), globals().get(), with one
// map of globals per interpreter context, so a variable set by one cell is read by a later one.
import type { CodeResult } from '@sandkeep/core/provider'

class MockNameError extends Error {}

export function miniInterpreter(code: string, language: string, globals: Map<string, unknown>): CodeResult {
  let stdout = ''
  let last: unknown
  const statements = code
    .split('\n')
    .flatMap((line) => line.split(/;\s*(?=(?:[^'"]|'[^']*'|"[^"]*")*$)/))
    .map((s) => s.trim())
    .filter((s) => s && !s.startsWith('#') && !s.startsWith('//'))
  try {
    for (const [index, statement] of statements.entries()) {
      const isLast = index === statements.length - 1
      const assign = /^(?:globalThis\.|const |let |var )?([A-Za-z_$][\w$]*)\s*=(?!=)\s*(.+)$/.exec(statement)
      if (assign) {
        globals.set(assign[1] as string, evaluate(assign[2] as string, language, globals))
        last = undefined
        continue
      }
      const print = /^(?:print|console\.log)\((.*)\)$/.exec(statement)
      if (print) {
        stdout += `${display(evaluate(print[1] as string, language, globals), language, false)}\n`
        last = undefined
        continue
      }
      const value = evaluate(statement, language, globals)
      last = isLast ? value : undefined
    }
  } catch (error) {
    const name =
      error instanceof MockNameError
        ? language === 'python'
          ? 'NameError'
          : 'ReferenceError'
        : 'SyntaxError'
    const value = error instanceof Error ? error.message : String(error)
    return {
      text: null,
      results: [],
      stdout,
      stderr: '',
      error: { name, value, traceback: `${name}: ${value}` },
    }
  }
  const text = last === undefined || last === null ? null : display(last, language, true)
  // As a notebook platform reports it: the last value is the cell's main result.
  return {
    text,
    results: text === null ? [] : [{ isMainResult: true, text }],
    stdout,
    stderr: '',
    error: null,
  }
}

function evaluate(expression: string, language: string, globals: Map<string, unknown>): unknown {
  const terms = expression.split(/\s+\+\s+/)
  const values = terms.map((term) => evaluateTerm(term.trim(), language, globals))
  return values.reduce(
    (sum: unknown, value) => (sum === undefined ? value : (sum as number) + (value as number)),
    undefined,
  )
}

function evaluateTerm(term: string, language: string, globals: Map<string, unknown>): unknown {
  if (/^-?\d+(\.\d+)?$/.test(term)) return Number(term)
  if (term.length >= 2 && (term[0] === "'" || term[0] === '"') && term.at(-1) === term[0])
    return term.slice(1, -1)
  if (term === 'None' || term === 'null') return null
  if (term === 'undefined') return undefined
  if (term === 'True' || term === 'true') return true
  if (term === 'False' || term === 'false') return false
  const get = /^globals\(\)\.get\(['"]([\w$]+)['"](?:,\s*(.+))?\)$/.exec(term)
  if (get)
    return globals.has(get[1] as string)
      ? globals.get(get[1] as string)
      : get[2]
        ? evaluateTerm(get[2], language, globals)
        : null
  const global = /^globalThis\.([\w$]+)$/.exec(term)
  if (global) return globals.get(global[1] as string)
  if (/^[A-Za-z_$][\w$]*$/.test(term)) {
    if (!globals.has(term)) throw new MockNameError(`name '${term}' is not defined`)
    return globals.get(term)
  }
  throw new Error(`the mock interpreter does not understand ${JSON.stringify(term.slice(0, 60))}`)
}

function display(value: unknown, language: string, repr: boolean): string {
  if (typeof value === 'string') return repr ? (language === 'python' ? `'${value}'` : `'${value}'`) : value
  if (typeof value === 'boolean' && language === 'python') return value ? 'True' : 'False'
  if (value === null) return language === 'python' ? 'None' : 'null'
  return String(value)
}
