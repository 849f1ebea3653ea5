import { describe, expect, it } from 'vitest'
import { e2bFromEnv } from './config.js'
import { ConfigError } from './errors.js'

describe('e2bFromEnv', () => {
  const base = { E2B_API_KEY: 'e2b_test', E2B_API_URL: 'http://127.0.0.1:1' }

  it('says what a host’s snapshots keep from SANDKEEP_SNAPSHOTS_KEEP_MEMORY, as sandkeep host prints it', () => {
    expect(e2bFromEnv({ ...base, SANDKEEP_SNAPSHOTS_KEEP_MEMORY: '0' })?.snapshots).toEqual({
      keepsMemory: false,
    })
    expect(e2bFromEnv({ ...base, SANDKEEP_SNAPSHOTS_KEEP_MEMORY: '1' })?.snapshots).toEqual({
      keepsMemory: true,
    })
    // Unset: the provider's default, E2B cloud's snapshots (memory and files).
    expect(e2bFromEnv(base)).not.toHaveProperty('snapshots')
  })

  it('refuses any other value rather than guess what the snapshots keep', () => {
    for (const value of ['false', 'no', '2', ' 0']) {
      expect(() => e2bFromEnv({ ...base, SANDKEEP_SNAPSHOTS_KEEP_MEMORY: value })).toThrow(ConfigError)
    }
  })

  it('is null without an API key', () => {
    expect(e2bFromEnv({ SANDKEEP_SNAPSHOTS_KEEP_MEMORY: 'bad' })).toBeNull()
  })
})
