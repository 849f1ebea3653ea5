// The code the READMEs show compiles: every fenced block whose info string is `ts check` (in the root README,
// the packages', the examples' and docs/) is written to a file of its own and typechecked by tsc, strict and
// with noUncheckedIndexedAccess as the repository's own code, against the BUILT packages' types (the
// `exports` maps and .d.ts files a user gets; `pnpm build` runs before the tests in .ci/run). A block is
// checked as an ES module, top-level await allowed, as a user's `snippet.mts` would be.
import { execFile } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'

const root = fileURLToPath(new URL('..', import.meta.url))
const run = promisify(execFile)

/** The markdown files that may hold checked blocks. */
function markdownFiles(): string[] {
  const files = ['README.md']
  for (const parent of ['packages', 'examples']) {
    for (const name of readdirSync(join(root, parent))) {
      if (existsSync(join(root, parent, name, 'README.md'))) files.push(join(parent, name, 'README.md'))
    }
  }
  for (const name of readdirSync(join(root, 'docs'))) if (name.endsWith('.md')) files.push(join('docs', name))
  return files
}

interface Snippet {
  /** `README.md:80`: the file and the line of the opening fence. */
  where: string
  code: string
}

/** The `ts check` blocks of one markdown file. */
function checkedBlocks(file: string, text: string): Snippet[] {
  const snippets: Snippet[] = []
  const lines = text.split('\n')
  for (let index = 0; index < lines.length; index++) {
    const open = /^(`{3,})\s*ts\s+check\s*$/.exec(lines[index] ?? '')
    if (!open) continue
    const fence = open[1] ?? '```'
    const start = index
    const body: string[] = []
    for (index++; index < lines.length && !(lines[index] ?? '').startsWith(fence); index++) {
      body.push(lines[index] ?? '')
    }
    snippets.push({ where: `${file}:${start + 1}`, code: `${body.join('\n')}\n` })
  }
  return snippets
}

const snippets = markdownFiles().flatMap((file) =>
  checkedBlocks(file, readFileSync(join(root, file), 'utf8')),
)

describe('README snippets', () => {
  it('the root README marks its code for checking', () => {
    expect(snippets.filter((snippet) => snippet.where.startsWith('README.md:')).length).toBeGreaterThan(0)
  })

  it('every `ts check` block typechecks, strict, against the built packages', async () => {
    for (const dir of ['core', 'redis', 'e2b', 'local-e2b', 'ai-sdk', 'cli']) {
      expect(
        existsSync(join(root, 'packages', dir, 'dist/index.d.ts')),
        `packages/${dir}: run pnpm build`,
      ).toBe(true)
    }
    // Under the repository's node_modules (ignored by git), so the snippets resolve @sandkeep/* as an app
    // in this workspace does, through the packages' exports maps.
    await mkdir(join(root, 'node_modules/.cache'), { recursive: true })
    const dir = await mkdtemp(join(root, 'node_modules/.cache/readme-snippets-'))
    try {
      const names = new Map<string, string>()
      for (const [index, snippet] of snippets.entries()) {
        const name = `snippet-${index}.mts`
        names.set(name, snippet.where)
        await writeFile(join(dir, name), snippet.code)
      }
      await writeFile(
        join(dir, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            target: 'ES2023',
            lib: ['ES2024', 'ESNext.Disposable'],
            module: 'NodeNext',
            moduleResolution: 'NodeNext',
            strict: true,
            noUncheckedIndexedAccess: true,
            verbatimModuleSyntax: true,
            skipLibCheck: true,
            noEmit: true,
            types: ['node'],
          },
          include: ['*.mts'],
        }),
      )
      const tsc = join(root, 'node_modules/typescript/bin/tsc')
      const result = await run(process.execPath, [tsc, '-p', dir, '--pretty', 'false'], { cwd: root }).then(
        () => ({ stdout: '' }),
        (error: { stdout?: string; stderr?: string }) => ({
          stdout: `${error.stdout ?? ''}${error.stderr ?? ''}`,
        }),
      )
      // tsc names snippet-N.mts(line,col): say which README block and which line of it.
      const problems = result.stdout
        .split('\n')
        .filter(Boolean)
        .map((line) =>
          line.replace(/^(?:.*[\\/])?(snippet-\d+\.mts)\((\d+),(\d+)\)/, (_, name: string, row: string) => {
            const where = names.get(name) ?? name
            return `${where} (block line ${row})`
          }),
        )
      expect(problems, `in ${relative(root, dir)}`).toEqual([])
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  }, 120_000)
})
