import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'

const root = fileURLToPath(new URL('..', import.meta.url))
const run = promisify(execFile)

// Each published entry point, imported by name from a plain Node process (no vitest aliases), so the
// built `exports` maps are what is tested. `pnpm build` runs before the tests in .ci/run.
const entries = [
  '@sandkeep/core',
  '@sandkeep/core/provider',
  '@sandkeep/core/store',
  '@sandkeep/testing',
  '@sandkeep/testing/mock-provider',
  '@sandkeep/redis',
  '@sandkeep/e2b',
  '@sandkeep/local-e2b',
  '@sandkeep/agent',
  '@sandkeep/ai-sdk',
  '@sandkeep/ai-sdk/harness',
  '@sandkeep/openai-agents',
  '@sandkeep/mastra',
  '@sandkeep/langgraph',
  'sandkeep',
]

describe('package exports', () => {
  it('every package is built', () => {
    for (const dir of [
      'core',
      'testing',
      'redis',
      'e2b',
      'local-e2b',
      'agent',
      'ai-sdk',
      'openai-agents',
      'mastra',
      'langgraph',
      'cli',
    ]) {
      expect(
        existsSync(`${root}packages/${dir}/dist/index.js`),
        `packages/${dir} is not built: run pnpm build`,
      ).toBe(true)
      expect(existsSync(`${root}packages/${dir}/dist/index.d.ts`), `packages/${dir} has no types`).toBe(true)
    }
  })

  it.each(entries)('%s resolves and loads from a consumer', async (name) => {
    const script = `const m = await import(${JSON.stringify(name)}); console.log(JSON.stringify(Object.keys(m)))`
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: root })
    expect(Array.isArray(JSON.parse(stdout))).toBe(true)
  })

  // Node 22 loads ES modules with require() (no top-level await in them), so a CommonJS app needs only a
  // condition that require() matches: `default` beside `import`. One build, no dual-package hazard: a second
  // (CJS) copy would mean two SandkeepError classes and two process-wide wait loops in one process.
  it.each(entries)('%s loads with require() from a CommonJS consumer, with the same names', async (name) => {
    const script = [
      `const required = require(${JSON.stringify(name)})`,
      `import(${JSON.stringify(name)}).then((imported) => console.log(JSON.stringify({`,
      '  required: Object.keys(required).filter((key) => key !== "module.exports" && key !== "__esModule").sort(),',
      '  imported: Object.keys(imported).sort(),',
      '  same: Object.keys(imported).every((key) => key === "default" || imported[key] === required[key]),',
      '})))',
    ].join('\n')
    const { stdout, stderr } = await run(process.execPath, ['--input-type=commonjs', '-e', script], {
      cwd: root,
    })
    const result: { required: string[]; imported: string[]; same: boolean } = JSON.parse(stdout)
    expect(result.required.length).toBeGreaterThan(0)
    expect(result.required).toEqual(result.imported.filter((key) => key !== 'default'))
    // one module instance: require() and import() hand out the same functions and classes
    expect(result.same).toBe(true)
    expect(stderr).toBe('')
  })

  it('the CLI transcript schema loads with require() too', async () => {
    const script = "console.log(typeof require('sandkeep/transcript.schema.json').$schema)"
    const { stdout } = await run(process.execPath, ['--input-type=commonjs', '-e', script], { cwd: root })
    expect(stdout.trim()).toBe('string')
  })

  // TypeScript resolves every entry's types for a CommonJS project: with node10 resolution (which ignores
  // `exports`: the subpaths need typesVersions) and with nodenext from a .cts file (require of ESM, TS >= 5.8).
  it.each([
    ['node10', { module: 'CommonJS', moduleResolution: 'node10' }, 'ts'],
    ['nodenext from CommonJS', { module: 'NodeNext', moduleResolution: 'NodeNext' }, 'cts'],
  ] as const)(
    'every entry point has types under %s resolution',
    async (_, options, extension) => {
      await mkdir(join(root, 'node_modules/.cache'), { recursive: true })
      const dir = await mkdtemp(join(root, 'node_modules/.cache/exports-types-'))
      try {
        const lines = entries.map((name, index) => `import * as entry${index} from ${JSON.stringify(name)}`)
        lines.push(`export const loaded = [${entries.map((_, index) => `entry${index}`).join(', ')}]`)
        await writeFile(join(dir, `consumer.${extension}`), `${lines.join('\n')}\n`)
        await writeFile(
          join(dir, 'tsconfig.json'),
          JSON.stringify({
            compilerOptions: {
              ...options,
              target: 'ES2022',
              strict: true,
              skipLibCheck: true,
              noEmit: true,
              types: ['node'],
            },
            include: [`consumer.${extension}`],
          }),
        )
        const tsc = join(root, 'node_modules/typescript/bin/tsc')
        const output = await run(process.execPath, [tsc, '-p', dir, '--pretty', 'false'], { cwd: root }).then(
          () => '',
          (error: { stdout?: string }) => error.stdout ?? String(error),
        )
        expect(output.split('\n').filter(Boolean)).toEqual([])
      } finally {
        await rm(dir, { recursive: true, force: true })
      }
    },
    120_000,
  )

  it('core exposes its public names from the built package', async () => {
    const script = `import * as core from '@sandkeep/core'; console.log(JSON.stringify(Object.keys(core)))`
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: root })
    const names: string[] = JSON.parse(stdout)
    for (const name of [
      'SandkeepError',
      'SandkeepErrorCode',
      'validateConversationId',
      'validateTenant',
      'processCheck',
      'portCheck',
      'codeCheck',
      'fileCheck',
      'customCheck',
    ]) {
      expect(names).toContain(name)
    }
  })

  it('core keeps the store kit at @sandkeep/core/store only, and names the rest at the root', async () => {
    const script = [
      "const core = await import('@sandkeep/core')",
      "const store = await import('@sandkeep/core/store')",
      'console.log(JSON.stringify({ core: Object.keys(core), store: Object.keys(store) }))',
    ].join('; ')
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: root })
    const { core, store }: { core: string[]; store: string[] } = JSON.parse(stdout)
    for (const name of ['checkStoreKey', 'parseRecordFields', 'encodeListCursor', 'rejectUnknownOptions']) {
      expect(store).toContain(name)
      expect(core).not.toContain(name)
    }
    expect(core.sort()).toEqual(
      [
        'DEFAULT_TENANT',
        'MAX_CONVERSATION_ID_BYTES',
        'SANDKEEP_METADATA',
        'SANDKEEP_VERSION',
        'SESSION_RECORD_SCHEMA_VERSION',
        'SNAPSHOT_NAME_PATTERN',
        'SandkeepError',
        'SandkeepErrorCode',
        'TENANT_PATTERN',
        'checkMaxBytes',
        'codeCheck',
        'createMemorySessionStore',
        'createSessionManager',
        'customCheck',
        'fileCheck',
        'hashConversationId',
        'mergeAbortSignals',
        'portCheck',
        'processCheck',
        'readAtMost',
        'readLimitError',
        'shellQuote',
        'snapshotBaseName',
        'turnEndedError',
        'validateConversationId',
        'validateCreateSnapshotOptions',
        'validateListSnapshotsOptions',
        'validateNetworkPolicy',
        'validatePort',
        'validateSandboxId',
        'validateSessionKey',
        'validateSnapshotId',
        'validateTenant',
      ].sort(),
    )
  })
  // The provider kit moved to @sandkeep/core/provider and the store's method types to /store; the root keeps
  // the old names (deprecated) as the very same values, so code written against the root still works.
  it('core names the provider kit at /provider, and the root re-exports the moved names unchanged', async () => {
    const script = [
      "const core = await import('@sandkeep/core')",
      "const provider = await import('@sandkeep/core/provider')",
      "const store = await import('@sandkeep/core/store')",
      'const moved = Object.keys(provider).filter((name) => name in core)',
      'console.log(JSON.stringify({',
      '  provider: Object.keys(provider),',
      '  same: moved.filter((name) => core[name] === provider[name]),',
      '  moved,',
      '  schema: [core.SESSION_RECORD_SCHEMA_VERSION, store.SESSION_RECORD_SCHEMA_VERSION],',
      '}))',
    ].join('\n')
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: root })
    const result: { provider: string[]; same: string[]; moved: string[]; schema: number[] } =
      JSON.parse(stdout)
    expect(result.provider.sort()).toEqual(
      [
        'CARRIED_KEPT_LINE',
        'CARRIED_LOST_ERROR',
        'CARRIED_LOST_EXIT',
        'CARRIED_PROBE_TAG',
        'MARKER_PATH',
        'PROBE_CELL_TAG',
        'SANDKEEP_METADATA',
        'SENTINEL_VARIABLE',
        'SNAPSHOT_NAME_PATTERN',
        'SandkeepError',
        'SandkeepErrorCode',
        'checkMaxBytes',
        'hashConversationId',
        'readAtMost',
        'readLimitError',
        'shellQuote',
        'snapshotBaseName',
        'validateCreateSnapshotOptions',
        'validateListSnapshotsOptions',
        'validateNetworkPolicy',
        'validatePort',
        'validateSandboxId',
        'validateSnapshotId',
      ].sort(),
    )
    // every name both entries have is one value: the probe's wire words are at /provider only
    expect(result.same).toEqual(result.moved)
    expect(result.moved).toContain('readAtMost')
    expect(result.moved).not.toContain('MARKER_PATH')
    expect(result.schema).toEqual([1, 1])
  })

  it('the harness provider has its own entry, which loads no @ai-sdk/harness module', async () => {
    // Every module the import resolves, by a resolve hook: @ai-sdk/harness is an optional peer, for types.
    const script = [
      "import { registerHooks } from 'node:module'",
      'const resolved = []',
      'registerHooks({ resolve: (specifier, context, next) => (resolved.push(specifier), next(specifier, context)) })',
      "const harness = await import('@sandkeep/ai-sdk/harness')",
      "const main = await import('@sandkeep/ai-sdk')",
      'console.log(JSON.stringify({ harness: Object.keys(harness), main: Object.keys(main), resolved }))',
    ].join('\n')
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: root })
    const { harness, main, resolved }: { harness: string[]; main: string[]; resolved: string[] } =
      JSON.parse(stdout)
    expect(harness.sort()).toEqual(['createSandkeepHarnessProvider', 'harnessSandboxTools'])
    expect(main).not.toContain('createSandkeepHarnessProvider')
    expect(resolved).toContain('@sandkeep/ai-sdk/harness')
    expect(resolved.filter((specifier) => specifier.startsWith('@ai-sdk/harness'))).toEqual([])
  })

  // Every framework adapter is a thin layer over the neutral one: it declares @sandkeep/agent and loads it.
  it.each(['ai-sdk', 'langgraph', 'mastra', 'openai-agents'])(
    '@sandkeep/%s is built over @sandkeep/agent',
    async (dir) => {
      const manifest = JSON.parse(await readFile(`${root}packages/${dir}/package.json`, 'utf8'))
      expect(manifest.dependencies['@sandkeep/agent']).toBe('workspace:*')
      const script = [
        "import { registerHooks } from 'node:module'",
        'const resolved = []',
        'registerHooks({ resolve: (specifier, context, next) => (resolved.push(specifier), next(specifier, context)) })',
        `await import(${JSON.stringify(`@sandkeep/${dir}`)})`,
        'console.log(JSON.stringify(resolved))',
      ].join('\n')
      const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: root })
      expect(JSON.parse(stdout)).toContain('@sandkeep/agent')
    },
  )

  // The framework-neutral layer must stay neutral: a LangGraph or Mastra app that installs it gets no `ai`.
  it('@sandkeep/agent loads no agent framework, and depends on none', async () => {
    const script = [
      "import { registerHooks } from 'node:module'",
      'const resolved = []',
      'registerHooks({ resolve: (specifier, context, next) => (resolved.push(specifier), next(specifier, context)) })',
      "const agent = await import('@sandkeep/agent')",
      'console.log(JSON.stringify({ names: Object.keys(agent), resolved }))',
    ].join('\n')
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: root })
    const { names, resolved }: { names: string[]; resolved: string[] } = JSON.parse(stdout)
    expect(names).toEqual(
      expect.arrayContaining(['createSandboxSession', 'createSandboxTools', 'stateLostNotice']),
    )
    const framework = /^(?:ai(?:\/|$)|@ai-sdk\/|@langchain\/|langchain|@mastra\/|@openai\/)/
    expect(resolved).toContain('@sandkeep/core')
    expect(resolved.filter((specifier) => framework.test(specifier))).toEqual([])
    const manifest = JSON.parse(await readFile(`${root}packages/agent/package.json`, 'utf8'))
    const declared = Object.keys({ ...manifest.dependencies, ...manifest.peerDependencies }).sort()
    expect(declared).toEqual(['@sandkeep/core', 'zod'])
  })
})
