import { MemorySaver } from '@langchain/langgraph-checkpoint'
import { createMemorySessionStore, createSessionManager, SandkeepError } from '@sandkeep/core'
import { createMockProvider } from '@sandkeep/testing'
import { describe, expect, it } from 'vitest'
import { SandkeepCheckpointSaver } from './saver.js'
import { sandboxRequestOf, sandkeepTools } from './tools.js'

const sessions = () =>
  createSessionManager({
    store: createMemorySessionStore(),
    provider: createMockProvider(),
    checkpoints: { every: 'turn' },
  })

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn()
  } catch (error) {
    return SandkeepError.isInstance(error) ? error.code : 'not a SandkeepError'
  }
  return undefined
}

describe('bad input is refused before any side effect', () => {
  it('saver options', () => {
    // @ts-expect-error a missing saver
    expect(codeOf(() => new SandkeepCheckpointSaver({ sessions: sessions() }))).toBe('INVALID_ARGUMENT')
    // @ts-expect-error a missing manager
    expect(codeOf(() => new SandkeepCheckpointSaver({ saver: new MemorySaver() }))).toBe('INVALID_ARGUMENT')
    expect(
      codeOf(
        () => new SandkeepCheckpointSaver({ saver: new MemorySaver(), sessions: sessions(), tenant: '' }),
      ),
    ).toBe('INVALID_ARGUMENT')
  })

  it('runConfig without a thread, tools options, a tool call outside a thread', () => {
    const saver = new SandkeepCheckpointSaver({ saver: new MemorySaver(), sessions: sessions() })
    expect(codeOf(() => saver.runConfig(''))).toBe('INVALID_ARGUMENT')
    expect(codeOf(() => sandkeepTools(saver, { maxOutputChars: 0 }))).toBe('INVALID_ARGUMENT')
    // @ts-expect-error an unknown journal mode
    expect(codeOf(() => sandkeepTools(saver, { journal: 'some' }))).toBe('INVALID_ARGUMENT')
    expect(codeOf(() => sandboxRequestOf({ configurable: {} }))).toBe('INVALID_ARGUMENT')
  })
})

describe('sandboxRequestOf', () => {
  it('reads the root checkpoint from the task config; with durability exit, the one the run started from', () => {
    const configurable = { thread_id: 't', checkpoint_map: { '': 'ck-root', 'sub:1': 'ck-sub' } }
    expect(sandboxRequestOf({ configurable })).toEqual({ threadId: 't', checkpointId: 'ck-root' })
    expect(sandboxRequestOf({ configurable: { ...configurable, __pregel_durability: 'exit' } })).toEqual({
      threadId: 't',
      checkpointId: undefined,
      startedFrom: true,
    })
  })

  it('keeps the runConfig callbacks and adds the run-end handler', () => {
    const saver = new SandkeepCheckpointSaver({ saver: new MemorySaver(), sessions: sessions() })
    const config = saver.runConfig('t', { configurable: { checkpoint_id: 'c' }, callbacks: [] })
    expect(config.configurable).toEqual({
      checkpoint_id: 'c',
      thread_id: 't',
      sandkeep_start_checkpoint_id: 'c',
    })
    const exit = saver.runConfig('t', { durability: 'exit' } as never)
    expect(exit.configurable).toEqual({ thread_id: 't', __pregel_durability: 'exit' })
    expect((config.callbacks as unknown[]).length).toBe(1)
  })
})
