import { SandkeepError } from '@sandkeep/core'
import { describe, expect, it } from 'vitest'
import { resolveOptions } from './options.js'

describe('resolveOptions', () => {
  it('applies defaults', () => {
    const resolved = resolveOptions()
    expect(resolved).toMatchObject({
      port: 0,
      hostname: '127.0.0.1',
      pauseMode: 'memory',
      defaultTimeoutMs: 300_000,
    })
  })
  it('refuses bad input with INVALID_ARGUMENT before doing anything', () => {
    for (const bad of [
      { port: -1 },
      { port: 1.5 },
      { hostname: '0.0.0.0' },
      { pauseMode: 'disk' },
      { retentionMs: 0 },
      { isolation: 'docker' },
      { apiKey: 'short' },
      { apiKey: 'has space in it' },
      { nope: true },
    ]) {
      let caught: unknown
      try {
        resolveOptions(bad as never)
      } catch (error) {
        caught = error
      }
      expect(SandkeepError.hasCode(caught, 'INVALID_ARGUMENT')).toBe(true)
    }
    expect(resolveOptions({ hostname: '0.0.0.0', allowRemote: true }).hostname).toBe('0.0.0.0')
  })
  it('upload caps (issue 13 item 4): 1 GiB per request and 4 GiB in flight by default, checked', () => {
    expect(resolveOptions()).toMatchObject({
      maxUploadBytes: 1024 ** 3,
      maxConcurrentUploadBytes: 4 * 1024 ** 3,
    })
    expect(resolveOptions({ maxUploadBytes: 8 * 1024 ** 3 }).maxConcurrentUploadBytes).toBe(8 * 1024 ** 3)
    for (const bad of [
      { maxUploadBytes: 0 },
      { maxUploadBytes: 1.5 },
      { maxConcurrentUploadBytes: -1 },
      { maxUploadBytes: 2048, maxConcurrentUploadBytes: 1024 },
    ]) {
      expect(() => resolveOptions(bad as never), JSON.stringify(bad)).toThrow(SandkeepError)
    }
  })
})
