// LangGraph's own checkpoint-saver conformance suite (@langchain/langgraph-checkpoint-validation) over the
// wrapper: around MemorySaver, and around the persistent SqliteSaver. The suite asserts that checkpoints,
// metadata and pending writes come back exactly as put, so the wrapper's ties must stay invisible.
import { MemorySaver } from '@langchain/langgraph-checkpoint'
import { validate } from '@langchain/langgraph-checkpoint-validation'
import { createMemorySessionStore, createSessionManager } from '@sandkeep/core'
import { SandkeepCheckpointSaver } from '@sandkeep/langgraph'
import { createMockProvider } from '@sandkeep/testing'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { sqliteUnavailable } from './sqlite.js'

// validate() registers its suites through test-runner globals; this project does not turn them on.
Object.assign(globalThis, { describe, it, expect, beforeAll, afterAll, beforeEach, afterEach })

function sessions() {
  return createSessionManager({
    store: createMemorySessionStore(),
    provider: createMockProvider(),
    checkpoints: { every: 'turn' },
  })
}

// The suite skips, by saver name, a case that MemorySaver and SqliteSaver fail themselves (they store whole
// channel values, not deltas). The wrapper hands put through unchanged, so it runs under the inner saver's
// name and inherits that skip, and only that one.
describe('SandkeepCheckpointSaver around MemorySaver', () => {
  validate({
    checkpointerName: 'MemorySaver',
    createCheckpointer: () => new SandkeepCheckpointSaver({ saver: new MemorySaver(), sessions: sessions() }),
  })
})

if (sqliteUnavailable === undefined) {
  const { SqliteSaver } = await import('@langchain/langgraph-checkpoint-sqlite')
  describe('SandkeepCheckpointSaver around SqliteSaver', () => {
    validate({
      checkpointerName: '@langchain/langgraph-checkpoint-sqlite',
      createCheckpointer: () =>
        new SandkeepCheckpointSaver({ saver: SqliteSaver.fromConnString(':memory:'), sessions: sessions() }),
    })
  })
} else {
  describe.skip(`SandkeepCheckpointSaver(SqliteSaver): better-sqlite3 does not load here (${sqliteUnavailable})`, () => {
    it('validate()', () => {})
  })
}
