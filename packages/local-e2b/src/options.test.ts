import { describe, expect, it } from 'vitest'
import { LocalE2BError } from './errors.js'
import { resolveOptions } from './options.js'
import { DEFAULT_LIMITS } from './runtime/limits.js'

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
      { user: 'admin' },
      { limits: { pids: 0 } },
      { limits: { memoryBytes: 1.5 } },
      { limits: { disk: 1 } },
      { limits: { cpuWeight: 20_000 } },
      { templateOptions: { x: { user: 'nobody' } } },
      { templateOptions: { x: { limits: { pids: -1 } } } },
      { templateOptions: { x: { shell: 'zsh' } } },
      { templateOptions: { x: { nestedUserNamespaces: 'yes' } } },
    ]) {
      let caught: unknown
      try {
        resolveOptions(bad as never)
      } catch (error) {
        caught = error
      }
      expect(LocalE2BError.isInstance(caught) && caught.code === 'INVALID_ARGUMENT').toBe(true)
    }
    expect(resolveOptions({ hostname: '0.0.0.0', allowRemote: true }).hostname).toBe('0.0.0.0')
  })
  it('upload caps: 1 GiB per request and 4 GiB in flight by default, checked', () => {
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
      expect(() => resolveOptions(bad as never), JSON.stringify(bad)).toThrow(LocalE2BError)
    }
  })

  it('sandbox user and limits default to user, 512 pids, 1 GiB, 2 GiB; templates inherit them', () => {
    const resolved = resolveOptions({
      limits: { pids: 64 },
      templateOptions: { admin: { user: 'root', limits: { memoryBytes: 64 * 1024 * 1024 } } },
    })
    expect(resolved.user).toBe('user')
    expect(resolved.limits).toEqual({ ...DEFAULT_LIMITS, pids: 64 })
    expect(DEFAULT_LIMITS).toMatchObject({ pids: 512, memoryBytes: 2 ** 30, diskBytes: 2 * 2 ** 30 })
    expect(resolved.templateOptions.admin).toEqual({
      user: 'root',
      limits: { ...DEFAULT_LIMITS, pids: 64, memoryBytes: 64 * 1024 * 1024 },
      nestedUserNamespaces: false,
    })
  })
})
