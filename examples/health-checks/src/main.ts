// A sandbox that holds two things a pause can lose: a background web server (a process) and an open sqlite
// connection in the Python kernel (memory). Both are declared as health checks with repairs; the host is
// restarted between two turns (processes and memory gone, files kept) and the next turn comes back whole.
//   bash scripts/dev.sh node examples/health-checks/src/main.ts   (at the repository root)
import {
  codeCheck,
  createSessionManager,
  portCheck,
  processCheck,
  type ResumeReport,
  type SandboxHandle,
} from '@sandkeep/core'
import { embeddedDefaults } from '@sandkeep-examples/shared'

const SERVER = 'python3 -m http.server 8080 --bind 127.0.0.1 --directory /home/user/site'
const CONNECT = "import sqlite3\ndb = sqlite3.connect('/home/user/app.db')"

export const healthChecks = [
  // Process checks run first; their repair starts the command again.
  processCheck({ name: 'web-server', command: SERVER }),
  // Then the port: after the process was restarted the probe waits for it to open.
  portCheck({ name: 'web-port', port: 8080, path: '/index.html' }),
  // The kernel's connection object: a cold kernel has no `db`, the repair opens it again.
  codeCheck({
    name: 'database',
    code: "db.execute('select 1').fetchone()[0] == 1",
    repair: { code: CONNECT },
  }),
]

/** Runs on every fresh sandbox: the site, the server, the database and its connection. */
async function bootstrap(sandbox: SandboxHandle): Promise<void> {
  await sandbox.writeFile('/home/user/site/index.html', '<h1>notes</h1>\n')
  await sandbox.startProcess(SERVER)
  const result = await sandbox.runCode(
    `${CONNECT}\ndb.execute('create table if not exists notes(text)')\ndb.commit()`,
  )
  if (result.error) throw new Error(`bootstrap failed: ${result.error.value}`)
}

const fetchPage = `python3 -c "import urllib.request as u; print(u.urlopen('http://127.0.0.1:8080/index.html').read().decode().strip())"`

export interface HealthChecksRun {
  before: ResumeReport | undefined
  after: ResumeReport | undefined
  rowsAfterRestart: string | null
  pageAfterRestart: string
}

export async function main(log: (line: string) => void = console.log): Promise<HealthChecksRun> {
  const defaults = await embeddedDefaults()
  const sessions = createSessionManager({
    store: defaults.store,
    provider: defaults.provider,
    healthChecks,
    bootstrap,
  })
  const conversationId = `health-checks-${Date.now()}`
  const show = (label: string, report: ResumeReport | undefined) => {
    if (!report) return
    log(
      `${label}: sandbox ${report.outcome}; memory ${report.survived.memory ?? 'n/a'}, files ${report.survived.filesystem ?? 'n/a'}, processes ${report.survived.processes ?? 'n/a'}`,
    )
    for (const check of report.checks)
      log(`  ${check.name.padEnd(11)} ${check.status}${check.message ? `  (${check.message})` : ''}`)
  }
  try {
    // Turn 1 creates the sandbox (bootstrap sets it up; declared checks skip a brand-new sandbox).
    await sessions.withTurn(conversationId, async (turn) => {
      await turn.sandbox.runCode(
        'db.execute("insert into notes values (\'written before the restart\')")\ndb.commit()',
      )
      show('turn 1', turn.report)
    })
    // Turn 2 resumes the paused sandbox: every probe passes, nothing to repair.
    const before = await sessions.withTurn(conversationId, async (turn) => {
      log(`turn 2 page: ${(await turn.sandbox.runCommand(fetchPage)).stdout.trim()}`)
      return turn.report
    })
    show('turn 2', before)

    log('restarting the host: every process and the kernel die, files stay')
    await defaults.host.faults.restart()

    const { after, rows, page } = await sessions.withTurn(conversationId, async (turn) => {
      const result = await turn.sandbox.runCode("db.execute('select text from notes').fetchall()")
      return {
        after: turn.report,
        rows: result.text,
        page: (await turn.sandbox.runCommand(fetchPage)).stdout.trim(),
      }
    })
    show('turn 3', after)
    log(`turn 3 rows: ${rows}`)
    log(`turn 3 page: ${page}`)
    await sessions.endSession(conversationId)
    return { before, after, rowsAfterRestart: rows, pageAfterRestart: page }
  } finally {
    await defaults.close()
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main()
}
