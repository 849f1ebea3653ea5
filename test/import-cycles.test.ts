// scripts/check-import-cycles.mjs, which `pnpm check` runs: it must find a circle, however it is written,
// and say which files close it; and the packages' sources must have none.
import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterEach, describe, expect, it } from 'vitest'

const root = fileURLToPath(new URL('..', import.meta.url))
const script = join(root, 'scripts/check-import-cycles.mjs')
const run = promisify(execFile)
const made: string[] = []

/** A source tree of the given files, in a fresh temp directory. */
function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'sandkeep-cycles-'))
  made.push(dir)
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true })
    writeFileSync(join(dir, path), text)
  }
  return dir
}

/** Exit code and output of the script on `dirs`. */
async function check(...dirs: string[]): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [script, ...dirs], { cwd: root })
    return { code: 0, output: stdout + stderr }
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string }
    return { code: failed.code, output: failed.stdout + failed.stderr }
  }
}

afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true })
})

describe('scripts/check-import-cycles.mjs', () => {
  it('fails on a circle of three files and names them in order', async () => {
    const dir = tree({
      'a.ts': "import { b } from './b.js'\nexport const a = () => b()\n",
      'b.ts': "import { c } from './nested/c.js'\nexport const b = () => c()\n",
      'nested/c.ts': "export { a as c } from '../a.js'\n",
      'free.ts': "import { a } from './a.js'\nexport const free = a\n",
    })
    const { code, output } = await check(dir)
    expect(code).toBe(1)
    expect(output).toContain('import circle of 3 files')
    expect(output).toMatch(/a\.ts\s+→ .*b\.ts\s+→ .*nested\/c\.ts\s+→ .*a\.ts/)
    expect(output).not.toContain('free.ts')
  })

  it.each([
    {
      how: 'a type-only import',
      files: {
        'turn.ts': "import { phase } from './phase.js'\nexport class Turn { run = phase }\n",
        'phase.ts': "import type { Turn } from './turn.js'\nexport const phase = (t?: Turn) => t\n",
      },
    },
    {
      how: 'a dynamic import and an import() type',
      files: {
        'a.ts': "export const load = () => import('./b.js')\n",
        'b.ts': "export type A = import('./a.js').Load\n",
      },
    },
    {
      how: "a directory's index and a side-effect import",
      files: {
        'parts/index.ts': "export { top } from '../top.js'\n",
        'top.ts': "import './parts/index.js'\nexport const top = 1\n",
      },
    },
  ])('counts a circle closed by $how', async ({ files }) => {
    expect((await check(tree(files))).code).toBe(1)
  })

  it('ignores imports written in comments', async () => {
    const commented = tree({
      'a.ts': "// import { b } from './b.js'\n/* import './b.js' */\nexport const a = 1\n",
      'b.ts': "import { a } from './a.js'\nexport const b = a\n",
    })
    expect(await check(commented)).toMatchObject({ code: 0 })
  })

  it('passes on the packages of this repository', async () => {
    const { code, output } = await check()
    expect(output).toMatch(/no import circle in \d+ files of \d+ source trees/)
    expect(code).toBe(0)
  })
})
