// The transcript format ships as a JSON Schema file, so editors can check a transcript as it is written; it
// is generated from the zod schema the CLI checks transcripts with. Regenerate after changing the schema:
//   SANDKEEP_WRITE_SCHEMA=1 pnpm vitest run packages/cli/src/transcript-schema.test.ts && pnpm format
import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { defaultTranscriptPath, transcriptJsonSchema } from './transcript.js'

const shippedPath = fileURLToPath(new URL('../transcript.schema.json', import.meta.url))
const generated = `${JSON.stringify(transcriptJsonSchema(), null, 2)}\n`
if (process.env.SANDKEEP_WRITE_SCHEMA === '1') writeFileSync(shippedPath, generated)

describe('transcript.schema.json', () => {
  it('the shipped file equals the schema generated from the zod schema (z.toJSONSchema)', () => {
    // Compared as JSON: the file's layout is biome's (`pnpm format`), its content must be the generated one.
    expect(JSON.parse(readFileSync(shippedPath, 'utf8'))).toEqual(transcriptJsonSchema())
  })

  it('is listed in the package files and exports', () => {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
      files: string[]
      exports: Record<string, unknown>
    }
    expect(pkg.files).toContain('transcript.schema.json')
    expect(pkg.exports['./transcript.schema.json']).toBe('./transcript.schema.json')
  })

  it('accepts the shipped transcript and refuses an unknown field (checked with zod from the JSON Schema)', () => {
    const schema = z.fromJSONSchema(JSON.parse(readFileSync(shippedPath, 'utf8')))
    const transcript = JSON.parse(readFileSync(defaultTranscriptPath, 'utf8'))
    expect(schema.safeParse(transcript).success).toBe(true)
    expect(schema.safeParse({ ...transcript, extra: 1 }).success).toBe(false)
  })
})
