import { SandkeepError } from '@sandkeep/core'
import { describe, expect, it } from 'vitest'
import { toolError } from './execute.js'
import {
  codeResultContent,
  shapeCodeResult,
  shapeCommandResult,
  shapeFileContent,
  shapeListing,
} from './model-output.js'

describe('result shaping', () => {
  it('cuts long outputs and keeps exit codes', () => {
    const shaped = shapeCommandResult({ exitCode: 2, stdout: 'x'.repeat(50), stderr: 'short' }, 20)
    expect(shaped.exitCode).toBe(2)
    expect(shaped.stdout).toContain('30 characters omitted')
    expect(shaped.stderr).toBe('short')
  })

  it('puts the exception name, value and a colour-free traceback in `error`', () => {
    const shaped = shapeCodeResult(
      {
        text: null,
        stdout: '',
        stderr: '',
        error: {
          name: 'NameError',
          value: "name 'x' is not defined",
          traceback: '\u001b[31mTraceback\u001b[0m line 1',
        },
      },
      1_000,
    )
    expect(shaped.error).toBe("NameError: name 'x' is not defined\nTraceback line 1")
    expect(shapeCodeResult({ text: '42', stdout: '', stderr: '', error: null }, 10)).toEqual({
      result: '42',
      stdout: '',
      stderr: '',
    })
  })

  it('selects file lines and tells the model how to read a long file', () => {
    expect(shapeFileContent('/f', 'a\nb\nc\n', 2, 3, 100)).toEqual({
      path: '/f',
      content: 'b\nc\n',
      totalLines: 3,
    })
    const long = shapeFileContent('/f', 'line\n'.repeat(1_000), undefined, undefined, 100)
    expect(long.content).toContain('characters omitted')
    expect(long.notice).toContain('1000 lines')
  })

  it('caps listings', () => {
    const entries = Array.from({ length: 5 }, (_, i) => ({ path: `f${i}`, type: 'file' as const }))
    const shaped = shapeListing('/d', entries, 3)
    expect(shaped.entries).toHaveLength(3)
    expect(shaped.notice).toContain('3 of 5')
  })

  // A plotting agent needs to see its plot: images reach the model as image parts, within a size bound.
  it('keeps rich outputs: images within the limits, text forms for the rest, nothing repeated', () => {
    const png = Buffer.from('a tiny png stand-in').toString('base64')
    const big = Buffer.alloc(2000).toString('base64')
    const shaped = shapeCodeResult(
      {
        text: 'Table()',
        results: [
          { isMainResult: false, text: '<Figure size 640x480 with 1 Axes>', png },
          { isMainResult: false, text: '<Figure>', png: big },
          { isMainResult: false, html: '<b>only html</b>' },
          { isMainResult: false, text: '<Figure>', jpeg: png },
          { isMainResult: true, text: 'Table()', json: { rows: 1 } },
        ],
        stdout: '',
        stderr: '',
        error: null,
      },
      100,
      { maxImageBytes: 1000, maxImages: 1 },
    )
    expect(shaped.result).toBe('Table()')
    expect(shaped.outputs).toEqual([
      // The image speaks for itself: its repr text is kept only as plain text next to it.
      {
        main: false,
        text: '<Figure size 640x480 with 1 Axes>',
        format: 'text',
        image: { mediaType: 'image/png', base64: png },
      },
      {
        main: false,
        text: '<Figure>',
        format: 'text',
        note: expect.stringMatching(/2000 bytes was left out: over the 1000-byte limit/),
      },
      { main: false, text: '<b>only html</b>', format: 'html' },
      {
        main: false,
        text: '<Figure>',
        format: 'text',
        note: expect.stringMatching(/at most 1 images per call/),
      },
      // The main value's plain text is `result`; its JSON form adds nothing the model needs twice.
    ])
    // A cell whose only result is its plain value gets no `outputs` at all (the common case stays as it was).
    const plain = shapeCodeResult(
      { text: '2', results: [{ isMainResult: true, text: '2' }], stdout: '', stderr: '', error: null },
      100,
    )
    expect(plain).toEqual({ result: '2', stdout: '', stderr: '' })
  })

  it('splits a result with images into JSON text and the images, and gives nothing without one', () => {
    const png = Buffer.from('png bytes').toString('base64')
    const jpeg = Buffer.from('jpeg bytes').toString('base64')
    const content = codeResultContent({
      result: null,
      stdout: 'plotted\n',
      stderr: '',
      outputs: [
        { main: false, text: '<Figure>', format: 'text', image: { mediaType: 'image/png', base64: png } },
        { main: false, text: 'a table', format: 'text' },
        { main: false, image: { mediaType: 'image/jpeg', base64: jpeg } },
      ],
    })
    expect(content?.images).toEqual([
      { mediaType: 'image/png', base64: png },
      { mediaType: 'image/jpeg', base64: jpeg },
    ])
    const described = JSON.parse(content?.text ?? '{}')
    expect(described.stdout).toBe('plotted\n')
    expect(described.outputs[0].image).toBe('image/png, attached after this JSON as image 1')
    expect(described.outputs[1]).toEqual({ main: false, text: 'a table', format: 'text' })
    expect(described.outputs[2].image).toBe('image/jpeg, attached after this JSON as image 2')
    expect(content?.text).not.toContain(png)
    expect(codeResultContent({ result: '2', stdout: '', stderr: '' })).toBeUndefined()
    expect(codeResultContent({ error: 'boom' })).toBeUndefined()
  })

  it('turns errors into results', () => {
    expect(toolError(new SandkeepError({ code: 'TIMEOUT', message: 'took too long' }))).toEqual({
      error: 'took too long',
      code: 'TIMEOUT',
    })
    expect(toolError(new DOMException('x', 'AbortError'))).toMatchObject({ code: 'ABORTED' })
    expect(toolError(new Error('boom'))).toEqual({ error: 'boom' })
  })
})
