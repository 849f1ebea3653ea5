// Every file operation the host does for a sandbox is immune to symlink swaps. Code inside
// the sandbox swaps a path component between a real directory/file and a symlink to a host path outside the
// sandbox while the host reads, writes, stats, lists, makes dirs, moves and removes through the e2b SDK.
// Nothing outside the sandbox may be read, created or changed. The race is counted, not timed: the host
// operations run until each kind has been tried HOST_OP_TRIES times while both swappers swap (bounded by a
// guard no healthy run comes near, so a slow machine only makes it take longer).
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Sandbox } from 'e2b'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { useTestHost } from './helpers.js'

/** How many times each kind of host operation runs against the swapping paths. */
const HOST_OP_TRIES = 12
/** Last-resort bounds: the swappers stop by themselves after this, and the host operations give up. */
const SWAP_GUARD_SECONDS = 100
const HOST_OPS_GUARD_MS = 80_000

/** Swaps `d` between a real directory and a symlink to the host canary dir (and `f`, `g` between a file
 * and links to host files) with renameat2(RENAME_EXCHANGE), so each name always exists. */
function swapLoop(pairs: string): string {
  return [
    'import ctypes, os, time',
    'libc = ctypes.CDLL(None, use_errno=True)',
    'os.chdir("/home/user/race")',
    `end = time.time() + ${SWAP_GUARD_SECONDS}`,
    `pairs = ${pairs}`,
    'print("swapping", flush=True)',
    'while time.time() < end:',
    '    for a, b in pairs:',
    '        libc.renameat2(-100, a, -100, b, 2)',
  ].join('\n')
}

describe('host file operations under a symlink swap race', () => {
  const t = useTestHost({ isolation: 'bubblewrap' })
  let canaryDir: string
  const canaryText = `CANARY-${randomBytes(8).toString('hex')}-`.padEnd(777, 'x')
  const keyText = `e2b_fake_host_key_${randomBytes(16).toString('hex')}`

  beforeAll(async () => {
    // Not under /tmp: an absolute link to /tmp/... means the sandbox's own /tmp (in-root resolution).
    canaryDir = mkdtempSync('/var/tmp/sk-canary-')
    writeFileSync(join(canaryDir, 'secret.txt'), canaryText)
    writeFileSync(join(canaryDir, 'victim.txt'), canaryText)
    writeFileSync(join(canaryDir, 'canary-only.txt'), canaryText)
    writeFileSync(join(canaryDir, 'api-key'), keyText)
    mkdirSync(join(canaryDir, 'victim-dir'))
  })
  afterAll(async () => {
    rmSync(canaryDir, { recursive: true, force: true })
  })

  it('never reads, creates or changes a host file outside the sandbox', async () => {
    const sandbox = await Sandbox.create({ ...t.opts })
    const setup = [
      'mkdir -p /home/user/race/d/victim-dir && cd /home/user/race',
      'echo ok > d/secret.txt && echo ok > d/victim.txt && echo ok > rf && echo ok > f && echo ok > g',
      `ln -s ${canaryDir} link && ln -s ${canaryDir}/secret.txt lf && ln -s ${canaryDir}/api-key kf`,
    ].join(' && ')
    expect((await sandbox.commands.run(setup)).exitCode).toBe(0)
    await sandbox.files.write('/home/user/race/swap-d.py', swapLoop('[(b"d", b"link")]'))
    await sandbox.files.write('/home/user/race/swap-f.py', swapLoop('[(b"f", b"lf"), (b"g", b"kf")]'))
    // Each swapper says when its loop begins: the host operations start once both swap.
    const swapping: Promise<void>[] = []
    const startSwapper = (script: string) => {
      const { promise, resolve } = Promise.withResolvers<void>()
      swapping.push(promise)
      return sandbox.commands.run(`python3 ${script}`, { background: true, onStdout: () => resolve() })
    }
    const swappers = [
      await startSwapper('/home/user/race/swap-d.py'),
      await startSwapper('/home/user/race/swap-f.py'),
    ]
    await Promise.all(swapping)

    const breaches: string[] = []
    const tries: Record<string, number> = {}
    const leaked = (text: string) => text.includes('CANARY-') || text.includes(keyText)
    const ops: Record<string, (i: number) => Promise<void>> = {
      read: async () => {
        for (const path of ['/home/user/race/d/secret.txt', '/home/user/race/f', '/home/user/race/g']) {
          const text = await sandbox.files.read(path).catch(() => '')
          if (leaked(text)) breaches.push(`read ${path} returned host content`)
        }
      },
      write: async (i) => {
        await sandbox.files.write('/home/user/race/d/secret.txt', 'pwned').catch(() => {})
        await sandbox.files.write('/home/user/race/f', 'pwned').catch(() => {})
        await sandbox.files.write('/home/user/race/g', 'pwned').catch(() => {})
        await sandbox.files.write(`/home/user/race/d/new-${i}.txt`, 'pwned').catch(() => {})
        await sandbox.files
          .write([{ path: `/home/user/race/d/multi-${i}.txt`, data: 'pwned' }])
          .catch(() => {})
      },
      stat: async () => {
        const info = await sandbox.files.getInfo('/home/user/race/d/canary-only.txt').catch(() => undefined)
        if (info) breaches.push('stat saw a host file')
        const linked = await sandbox.files.getInfo('/home/user/race/d/secret.txt').catch(() => undefined)
        if (linked && linked.size === 777) breaches.push('stat reported the host file size')
      },
      list: async () => {
        const entries = await sandbox.files.list('/home/user/race/d').catch(() => [])
        if (entries.some((entry) => entry.name === 'canary-only.txt')) breaches.push('list showed a host dir')
      },
      makeDir: async (i) => {
        await sandbox.files.makeDir(`/home/user/race/d/made-${i}`).catch(() => {})
      },
      move: async (i) => {
        await sandbox.files
          .rename('/home/user/race/d/victim.txt', `/home/user/race/moved-${i}`)
          .catch(() => {})
        await sandbox.files.rename('/home/user/race/rf', '/home/user/race/d/planted').catch(() => {})
      },
      remove: async () => {
        await sandbox.files.remove('/home/user/race/d/victim-dir').catch(() => {})
        await sandbox.files.remove('/home/user/race/d/victim.txt').catch(() => {})
      },
    }
    // Every kind keeps going until all have HOST_OP_TRIES tries, so they overlap the whole time.
    const enough = () => Object.keys(ops).every((name) => (tries[name] ?? 0) >= HOST_OP_TRIES)
    const guard = Date.now() + HOST_OPS_GUARD_MS
    await Promise.all(
      Object.entries(ops).map(async ([name, op]) => {
        for (let i = 0; !enough() && Date.now() < guard; i++) {
          tries[name] = (tries[name] ?? 0) + 1
          await op(i)
        }
      }),
    )
    for (const swapper of swappers) await swapper.kill().catch(() => {})

    const left = readdirSync(canaryDir).sort()
    const changed = ['secret.txt', 'victim.txt', 'canary-only.txt']
      .filter((name) => existsSync(join(canaryDir, name)))
      .filter((name) => readFileSync(join(canaryDir, name), 'utf8') !== canaryText)
    if (left.join() !== 'api-key,canary-only.txt,secret.txt,victim-dir,victim.txt')
      breaches.push(`host dir changed: ${left.join()}`)
    if (changed.length > 0) breaches.push(`host files changed: ${changed.join()}`)
    if (readFileSync(join(canaryDir, 'api-key'), 'utf8') !== keyText) breaches.push('host key file changed')
    const summary = `tries ${JSON.stringify(tries)}; breaches ${breaches.length}: ${[...new Set(breaches)].join('; ')}`
    expect(breaches, summary).toEqual([])
    expect(
      Object.values(tries).every((count) => count >= HOST_OP_TRIES),
      summary,
    ).toBe(true)
    console.log(summary)
  }, 120_000)

  it('follows symlinks that stay in the sandbox and refuses static ones that leave it, and ..', async () => {
    const sandbox = await Sandbox.create({ ...t.opts })
    await sandbox.files.write('/home/user/static/real/a.txt', 'inside')
    const setup = [
      'cd /home/user/static',
      'ln -s real inner && ln -s /home/user/static/real/a.txt abs && ln -s /tmp tmp',
      `ln -s ${canaryDir} out && ln -s ${canaryDir}/secret.txt outf && ln -s ../../../../../.. up`,
    ].join(' && ')
    expect((await sandbox.commands.run(setup)).exitCode).toBe(0)
    expect(await sandbox.files.read('/home/user/static/inner/a.txt')).toBe('inside')
    expect(await sandbox.files.read('/home/user/static/abs')).toBe('inside')
    await sandbox.files.write('/home/user/static/inner/b.txt', 'via link')
    expect(await sandbox.files.read('/home/user/static/real/b.txt')).toBe('via link')
    await sandbox.files.write('/home/user/static/tmp/in-root.txt', 'sandbox tmp')
    expect((await sandbox.commands.run('cat /tmp/in-root.txt')).stdout).toBe('sandbox tmp')
    await expect(sandbox.files.read('/home/user/static/out/secret.txt')).rejects.toThrow()
    await expect(sandbox.files.read('/home/user/static/outf')).rejects.toThrow()
    await expect(sandbox.files.write('/home/user/static/out/x.txt', 'no')).rejects.toThrow()
    await expect(sandbox.files.list('/home/user/static/out')).rejects.toThrow()
    await expect(sandbox.files.read('/home/user/static/up/etc/passwd')).rejects.toThrow()
    await expect(sandbox.files.read('/home/user/../../etc/passwd')).rejects.toThrow()
    await expect(sandbox.files.makeDir('/home/user/static/out/made')).rejects.toThrow()
    expect(readdirSync(canaryDir)).not.toContain('x.txt')
    expect(readdirSync(canaryDir)).not.toContain('made')
    // Stat of a link itself still reports it as a link, with its target text.
    const info = await sandbox.files.getInfo('/home/user/static/out')
    expect(info.symlinkTarget).toBe(canaryDir)
  }, 60_000)
})
