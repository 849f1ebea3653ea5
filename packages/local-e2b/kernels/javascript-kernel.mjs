// sandkeep local-e2b: the JavaScript kernel of one code-interpreter context (Node 20 or later, no packages).
//
// One process per context, started by the host inside the sandbox. Cells run as scripts in this process's own
// global scope, so top-level `const`/`let`/`function`/`class` of one cell are visible in the next. A cell's
// completion value is displayed with util.inspect, as Node's REPL shows it. Top-level `await` is supported by
// Node's own REPL rewrite (internal/repl/await, reached through --expose-internals), static `import` lines are
// turned into dynamic imports. console output is streamed while the cell runs.
//
// Protocol: the same as kernels/python-kernel.py (see there). An interrupt message abandons a cell that waits on a
// promise; a cell that keeps the main thread busy cannot read it, so the host also sends SIGINT, which stops a
// synchronous script (breakOnSigint). Reading requests on a worker thread instead would cost every cold start the
// boot of a second isolate.
import { EventEmitter } from 'node:events'
import { createRequire, isBuiltin } from 'node:module'
import path from 'node:path'
import process from 'node:process'
import { pathToFileURL } from 'node:url'
import util from 'node:util'
import vm from 'node:vm'

const PROTOCOL_VERSION = 1
const CELL_PREFIX = 'cell-'

// Set by the host's hello; nothing is written before it.
let marker = ''
const writeRaw = process.stdout.write.bind(process.stdout)

function send(message) {
  writeRaw(`${marker}${JSON.stringify(message)}\n`)
}

function asText(chunk, encoding) {
  if (typeof chunk === 'string') return chunk
  return Buffer.from(chunk).toString(typeof encoding === 'string' ? encoding : 'utf8')
}

// Most UTF-16 code units one stdout/stderr message carries: the host parses each message whole, so a huge
// console.log goes in pieces, and its work per message stays bounded.
const MESSAGE_UNITS = 64 * 1024

/** Sends `text` as `name` messages of at most MESSAGE_UNITS units, never splitting a surrogate pair. */
function sendOutput(name, text) {
  let start = 0
  while (start < text.length) {
    let end = Math.min(start + MESSAGE_UNITS, text.length)
    const last = text.charCodeAt(end - 1)
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end -= 1
    send({ t: name, text: text.slice(start, end) })
    start = end
  }
}

// console.* and process.std*.write of user code become framed messages on fd 1, in the order they were written.
for (const [stream, name] of [
  [process.stdout, 'stdout'],
  [process.stderr, 'stderr'],
]) {
  stream.write = (chunk, encoding, callback) => {
    const text = asText(chunk, encoding)
    if (text && marker) sendOutput(name, text)
    const done = typeof encoding === 'function' ? encoding : callback
    if (typeof done === 'function') process.nextTick(done)
    return true
  }
}

// Requests arrive on stdin, one JSON object per line.
const reader = new EventEmitter()
let unread = ''
process.stdin.setEncoding('utf8')
process.stdin.on('data', (text) => {
  unread += text
  let newline = unread.indexOf('\n')
  while (newline >= 0) {
    const line = unread.slice(0, newline)
    unread = unread.slice(newline + 1)
    newline = unread.indexOf('\n')
    let message
    try {
      message = JSON.parse(line)
    } catch {
      continue
    }
    reader.emit('message', message)
  }
})
process.stdin.on('end', () => reader.emit('message', { t: 'eof' }))

// SIGINT (sent by the host with `kill -INT <pid>` inside the sandbox) stops a synchronous cell through
// breakOnSigint; outside such a cell it must not end the kernel.
process.on('SIGINT', () => {})
// Using the main-context loader for import() warns once that it is experimental; that is our business, not the
// user's, so that one warning is dropped and every other warning is still shown.
process.removeAllListeners('warning')
process.on('warning', (warning) => {
  if (warning?.name === 'ExperimentalWarning' && /USE_MAIN_CONTEXT_DEFAULT_LOADER/.test(warning.message))
    return
  process.stderr.write(`${warning?.name ?? 'Warning'}: ${warning?.message ?? String(warning)}\n`)
})
process.on('uncaughtException', (error) => {
  if (marker) send({ t: 'stderr', text: `Uncaught ${describe(error)}\n` })
})
process.on('unhandledRejection', (reason) => {
  if (marker) send({ t: 'stderr', text: `Uncaught (in promise) ${describe(reason)}\n` })
})

function describe(error) {
  if (error instanceof Error) return error.stack ?? `${error.name}: ${error.message}`
  return util.inspect(error)
}

const requireFromCwd = createRequire(path.join(process.cwd(), 'cell.js'))

// Fallback importer for a Node without the main-context loader: resolves like require() from the working directory.
async function importFromCwd(specifier) {
  if (isBuiltin(specifier) || /^[a-z][a-z0-9+.-]*:/i.test(specifier)) return import(specifier)
  try {
    return await import(pathToFileURL(requireFromCwd.resolve(specifier)).href)
  } catch {
    return import(path.isAbsolute(specifier) ? pathToFileURL(specifier).href : specifier)
  }
}

function defineGlobals() {
  globalThis.require = requireFromCwd
  // Target of the rewritten static imports (see translateImports).
  Object.defineProperty(globalThis, '__sandkeepImport', { value: importFromCwd, enumerable: false })
}

// import() inside a cell: Node 20 takes the main context's loader without flags (it resolves from the working
// directory); an older Node gets importFromCwd through a global instead.
const mainLoader = vm.constants?.USE_MAIN_CONTEXT_DEFAULT_LOADER
const importCall = mainLoader ? 'import' : '__sandkeepImport'

// `import x from 'y'` is not valid in a script: rewrite static imports at line starts into awaited imports.
const staticImport =
  /^([ \t]*)import\s+(?:([\w$]+)\s*(?:,\s*)?)?(?:\{([^}]*)\}|\*\s*as\s+([\w$]+))?\s*from\s*(['"][^'"\n]+['"])[ \t]*;?/gm
const sideEffectImport = /^([ \t]*)import\s*(['"][^'"\n]+['"])[ \t]*;?/gm

function translateImports(code) {
  if (!code.includes('import')) return code
  return code
    .replace(staticImport, (_whole, indent, defaultName, named, namespaceName, source) => {
      if (namespaceName) {
        const prefix = defaultName ? `var { default: ${defaultName} } = await ${importCall}(${source}); ` : ''
        return `${indent}${prefix}var ${namespaceName} = await ${importCall}(${source});`
      }
      const bindings = []
      if (defaultName) bindings.push(`default: ${defaultName}`)
      for (const part of (named ?? '').split(',')) {
        const item = part.trim()
        if (!item || item.startsWith('type ')) continue
        const alias = item.split(/\s+as\s+/)
        bindings.push(alias.length === 2 ? `${alias[0]}: ${alias[1]}` : item)
      }
      if (bindings.length === 0) return `${indent}await ${importCall}(${source});`
      return `${indent}var { ${bindings.join(', ')} } = await ${importCall}(${source});`
    })
    .replace(sideEffectImport, (_whole, indent, source) => `${indent}await ${importCall}(${source});`)
}

let rewriteAwait
function topLevelAwaitRewrite(code) {
  if (rewriteAwait === undefined) {
    try {
      rewriteAwait = createRequire(import.meta.url)('internal/repl/await').processTopLevelAwait
    } catch {
      // Without --expose-internals a cell with top-level await still runs, but its declarations stay local.
      rewriteAwait = (source) => `(async () => { ${source}\n})()`
    }
  }
  return rewriteAwait(code)
}

function compile(code, filename) {
  const options = mainLoader ? { filename, importModuleDynamically: mainLoader } : { filename }
  // `{ a: 1 }` alone is an object, as in the REPL, not a block with a label.
  if (/^\s*\{/.test(code) && /\}\s*$/.test(code)) {
    try {
      return { script: new vm.Script(`(${code})`, options), wrapped: false }
    } catch {}
  }
  try {
    return { script: new vm.Script(code, options), wrapped: false }
  } catch (error) {
    if (!(error instanceof SyntaxError) || !code.includes('await')) throw error
    const rewritten = topLevelAwaitRewrite(code)
    if (!rewritten) throw error
    return { script: new vm.Script(rewritten, options), wrapped: true }
  }
}

// A typescript context's cells lose their types before they run: TypeScript's own transpiler (Debian's
// node-typescript), loaded with the first cell. Without it the cells run as they are.
const typescript = process.argv.includes('--typescript')
let compiler

function stripTypes(code) {
  if (compiler === undefined) {
    compiler = null
    const load = createRequire(import.meta.url)
    for (const candidate of ['/usr/share/nodejs/typescript', 'typescript']) {
      try {
        compiler = load(candidate)
        break
      } catch {}
    }
  }
  if (!compiler) return code
  const compilerOptions = {
    target: compiler.ScriptTarget.ES2022,
    module: compiler.ModuleKind.ESNext,
    // Imports stay as written (translateImports turns them into awaited imports).
    isolatedModules: true,
    preserveValueImports: true,
  }
  return compiler.transpileModule(code, { compilerOptions }).outputText
}

let abandon = null
let currentCell = null

async function evaluate(code, filename) {
  const source = typescript ? stripTypes(code) : code
  const { script, wrapped } = compile(translateImports(source), filename)
  const value = script.runInThisContext({ breakOnSigint: true, displayErrors: false })
  if (!wrapped) return value
  // The rewritten cell is an async function returning { value } (or undefined when it ends in a statement).
  const interrupted = new Promise((_, reject) => {
    abandon = () =>
      reject(Object.assign(new Error('the cell was interrupted'), { name: 'KeyboardInterrupt' }))
  })
  try {
    const outcome = await Promise.race([value, interrupted])
    return outcome?.value
  } finally {
    abandon = null
  }
}

// Frames of the kernel and of node:vm are noise for the user: keep the cell's own ones.
function userStack(error) {
  const stack = typeof error?.stack === 'string' ? error.stack : ''
  if (!stack) return `${error?.name ?? 'Error'}: ${error?.message ?? String(error)}`
  const lines = stack.split('\n')
  const kept = []
  for (const line of lines) {
    if (/^\s+at /.test(line) && !line.includes(CELL_PREFIX)) {
      if (line.includes('node:vm') || line.includes(import.meta.url)) break
      if (error instanceof SyntaxError) break
    }
    kept.push(line)
  }
  return kept.join('\n').replace(/\n+$/, '')
}

function applyEnv(env) {
  const previous = new Map()
  if (env && typeof env === 'object') {
    for (const [key, value] of Object.entries(env)) {
      if (typeof value !== 'string' || !key || key.includes('=') || `${key}${value}`.includes('\0')) continue
      previous.set(key, process.env[key])
      process.env[key] = value
    }
  }
  return previous
}

function restoreEnv(previous) {
  for (const [key, value] of previous) {
    if (value === undefined) delete process.env[key]
    else process.env[key] = value
  }
}

let count = 0
let queue = Promise.resolve()

async function execute(message) {
  count += 1
  const id = message.id
  const filename = `${CELL_PREFIX}${count}`
  const previous = applyEnv(message.env)
  currentCell = id
  send({ t: 'start', id, count })
  try {
    const value = await evaluate(String(message.code ?? ''), filename)
    if (value !== undefined) {
      send({ t: 'result', data: { 'text/plain': util.inspect(value) }, main: true })
    }
  } catch (error) {
    const interrupted = error?.code === 'ERR_SCRIPT_EXECUTION_INTERRUPTED'
    send({
      t: 'error',
      name: interrupted ? 'KeyboardInterrupt' : error instanceof Error ? error.name : 'Error',
      value: interrupted
        ? 'the cell was interrupted'
        : error instanceof Error
          ? error.message
          : util.inspect(error),
      traceback: interrupted ? '' : userStack(error),
    })
  } finally {
    restoreEnv(previous)
    currentCell = null
    send({ t: 'done', id })
  }
}

reader.on('message', (message) => {
  switch (message.t) {
    case 'hello': {
      marker = `\x1e${message.nonce}:`
      defineGlobals()
      send({ t: 'ready', pid: process.pid, version: PROTOCOL_VERSION })
      break
    }
    case 'execute':
      queue = queue.then(() => execute(message))
      break
    case 'interrupt':
      if (abandon && message.id === currentCell) abandon()
      break
    case 'eof':
      process.exit(0)
  }
})
