import { describe, expect, it } from 'vitest'
import { snapshotBaseName } from './snapshots.js'

describe('snapshotBaseName', () => {
  it('takes the part after the last slash and before a tag', () => {
    expect(snapshotBaseName('team-slug/sandkeep-ab-3:default')).toBe('sandkeep-ab-3')
    expect(snapshotBaseName('sandkeep-ab-3:v1')).toBe('sandkeep-ab-3')
    expect(snapshotBaseName('local/base-env')).toBe('base-env')
    expect(snapshotBaseName('plain')).toBe('plain')
    expect(snapshotBaseName('a/b/c:t')).toBe('c')
  })
})
