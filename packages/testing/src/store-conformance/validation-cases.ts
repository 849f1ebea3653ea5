// The bad inputs of the validation area, one table per kind of argument: every store must refuse each with
// INVALID_ARGUMENT before it reaches the backend.
import type { Lease } from '@sandkeep/core/store'

/** Keys that are not valid session keys; `tenant` is a valid tenant to pair with bad conversation ids. */
export const badKeys = (tenant: string): unknown[] => [
  null,
  'conv',
  { tenant },
  { tenant, conversationId: '' },
  { tenant, conversationId: 'a\nb' },
  { tenant, conversationId: 'x'.repeat(513) },
  { tenant, conversationId: 42 },
  { tenant: 'bad tenant', conversationId: 'c' },
  { tenant: 'a:b', conversationId: 'c' },
  { tenant: '', conversationId: 'c' },
  { tenant: 'x'.repeat(65), conversationId: 'c' },
  { conversationId: 'c' },
]

/** Options of acquire that are not valid. */
export const badAcquires: unknown[] = [
  undefined,
  {},
  { holderId: '', leaseMs: 1000 },
  { holderId: 'h\u0000', leaseMs: 1000 },
  { holderId: 'x'.repeat(200), leaseMs: 1000 },
  { holderId: 'h', leaseMs: 0 },
  { holderId: 'h', leaseMs: 1.5 },
  { holderId: 'h', leaseMs: '1000' },
  { holderId: 'h', leaseMs: Number.POSITIVE_INFINITY },
  { holderId: 'h', leaseMs: 1000, ttlMs: -1 },
]

/** Leases that are not valid, made from a valid one. */
export const badLeases = (lease: Lease): unknown[] => [
  null,
  {},
  { ...lease, holderId: '' },
  { ...lease, fencingToken: 0 },
  { ...lease, fencingToken: 1.5 },
  { ...lease, expiresAt: 'soon' },
]

/** Inputs of setSandbox that are not valid. */
export const badSetSandboxes: unknown[] = [
  null,
  { sandboxId: '', expectedSandboxId: null, providerId: 'p' },
  { sandboxId: 's\n', expectedSandboxId: null, providerId: 'p' },
  { sandboxId: 'x'.repeat(300), expectedSandboxId: null, providerId: 'p' },
  { sandboxId: 's', providerId: 'p' },
  { sandboxId: 's', expectedSandboxId: '', providerId: 'p' },
  { sandboxId: 's', expectedSandboxId: null, providerId: '' },
  { sandboxId: 's', expectedSandboxId: null, providerId: 'p', state: 'sleeping' },
  { sandboxId: 's', expectedSandboxId: null, providerId: 'p', surprise: true },
]

/** Inputs of release that are not valid. */
export const badReleases: unknown[] = [
  null,
  {},
  { turnEndedAt: -1 },
  { turnEndedAt: 'now' },
  { turnEndedAt: 1, runningSeconds: -1 },
  { turnEndedAt: 1, pausedSeconds: Number.NaN },
  { turnEndedAt: 1, stateIfLast: 'gone' },
  { turnEndedAt: 1, ttlMs: 0 },
  { turnEndedAt: 1, manifest: 'yes' },
  { turnEndedAt: 1, manifest: { writtenAt: 1, sandboxId: 's', memory: 'lots' } },
  { turnEndedAt: 1, manifest: { writtenAt: 1, sandboxId: '' } },
  {
    turnEndedAt: 1,
    manifest: {
      writtenAt: 1,
      sandboxId: 's',
      filesystem: { path: '/m', value: 'v', witnesses: [{ path: 'a', sha256: 'not hex' }] },
    },
  },
  { turnEndedAt: 1, manifestIfTurnCount: -1 },
  { turnEndedAt: 1, runningFrom: -5 },
  { turnEndedAt: 1, runningFrom: 'earlier' },
  { turnEndedAt: 1, manifestIfTurnCount: 1.5 },
  { turnEndedAt: 1, manifestIfTurnCount: '2' },
  { turnEndedAt: 1, usedSandbox: 'yes' },
  { turnEndedAt: 1, holdIfLast: 1 },
  { turnEndedAt: 1, extra: 1 },
]

/** Journal steps that are not valid. */
export const badSteps: unknown[] = [
  null,
  {},
  { kind: 'shell', command: 'ls' },
  { kind: 'command', command: '' },
  { kind: 'command', command: 7 },
  { kind: 'code', code: 'x', language: 'ruby' },
  { kind: 'file', path: '', content: 'x' },
  { kind: 'file', path: '/a' },
  // A path outside the sandbox's home would block every later replay.
  { kind: 'file', path: '../../etc/passwd', content: 'x' },
  { kind: 'file', path: '/etc/passwd', content: 'x' },
  { kind: 'command', command: 'ls', secret: 'x' },
  // A NUL can be stored but never replayed: no command line, directory name or Python source holds one.
  { kind: 'command', command: 'echo a\0b' },
  { kind: 'command', command: 'ls', cwd: '/home/user\0' },
  { kind: 'code', code: 'x = 1\0' },
  { kind: 'code', code: 'x = 1\0', language: 'javascript' },
]
