// The test-runner functions the conformance suites are written against, passed in by the caller (vitest's,
// jest's, ...) so that importing `@sandkeep/testing` never loads a test runner.

/** The matchers the suites use: a subset every vitest and jest `expect(...)` has. */
export interface ConformanceMatchers {
  toBe(expected: unknown): void
  toEqual(expected: unknown): void
  toMatchObject(expected: object): void
  toBeDefined(): void
  toBeUndefined(): void
  toBeNull(): void
  toBeGreaterThan(expected: number): void
  toBeGreaterThanOrEqual(expected: number): void
  toBeLessThan(expected: number): void
  toBeLessThanOrEqual(expected: number): void
  toBeCloseTo(expected: number, digits?: number): void
  toHaveLength(length: number): void
  toContain(item: unknown): void
  toMatch(pattern: RegExp | string): void
}

/** `expect` as the suites call it; the message is shown by runners that take one (vitest). */
export type ConformanceExpect = (actual: unknown, message?: string) => ConformanceMatchers

/** What the store suite needs from a test runner: `describe`, `test`, `expect` and an `afterEach` hook. */
export interface StoreConformanceTestApi {
  describe: (name: string, body: () => void) => void
  test: (name: string, body: () => Promise<void>) => void
  expect: ConformanceExpect
  afterEach: (hook: () => Promise<void>) => void
}

/** The test context the provider suite reads (to skip a test from inside it). */
export interface ConformanceTestContext {
  skip: () => void
}

type ProviderTestBody = (context: ConformanceTestContext) => Promise<void> | void
/** A `test`/`it` as the provider suite calls it: with per-test options (the timeout). */
export type ProviderConformanceTest = (
  name: string,
  options: { timeout: number },
  body: ProviderTestBody,
) => void

/** What the provider suite needs from a test runner (vitest's API; jest lacks `skipIf`). */
export interface ProviderConformanceTestApi {
  describe: ((name: string, body: () => void) => void) & { skip: (name: string, body: () => void) => void }
  it: ProviderConformanceTest & { skipIf: (condition: boolean | undefined) => ProviderConformanceTest }
  expect: ConformanceExpect & { objectContaining: (value: Record<string, unknown>) => unknown }
  beforeAll: (hook: () => Promise<void>, timeout?: number) => void
  afterAll: (hook: () => Promise<void>, timeout?: number) => void
}

/**
 * The running test runner's functions, for callers that pass none: inside a vitest worker, vitest's own
 * module namespace (the object vitest hands in-source tests as `import.meta.vitest`), else the globals that
 * jest (or vitest with `globals: true`) defines. Throws, naming `suite`, when there is no runner.
 */
export function runnerTestApi(suite: string): StoreConformanceTestApi & ProviderConformanceTestApi {
  const scope = globalThis as Record<string, unknown>
  const vitest = scope.__vitest_index__ as Record<string, unknown> | undefined
  const source = typeof vitest?.describe === 'function' ? vitest : scope
  const { describe, test, it, expect, afterEach, beforeAll, afterAll } = source
  if (typeof describe !== 'function' || typeof expect !== 'function' || typeof (test ?? it) !== 'function') {
    throw new Error(
      `${suite}: no test runner found. Pass your runner's functions, e.g. { describe, test, expect, afterEach } ` +
        'from vitest, or run the file under vitest or jest.',
    )
  }
  return { describe, test: test ?? it, it: it ?? test, expect, afterEach, beforeAll, afterAll } as never
}
