import { describe, expect, it } from 'vitest'
import { codeModelOutput } from './code-model-output.js'

describe('codeModelOutput', () => {
  it('sends images as image parts after the JSON text, and plain JSON when there is none', () => {
    const png = Buffer.from('png bytes').toString('base64')
    const withImage = codeModelOutput({
      result: null,
      stdout: 'plotted\n',
      stderr: '',
      outputs: [
        { main: false, text: '<Figure>', format: 'text', image: { mediaType: 'image/png', base64: png } },
      ],
    })
    expect(withImage).toEqual({
      type: 'content',
      value: [
        { type: 'text', text: expect.any(String) },
        { type: 'file', mediaType: 'image/png', data: { type: 'data', data: png } },
      ],
    })
    const text = withImage.type === 'content' ? withImage.value[0] : undefined
    const described = JSON.parse(text && 'text' in text ? text.text : '{}')
    expect(described.stdout).toBe('plotted\n')
    expect(described.outputs[0].image).toBe('image/png, attached after this JSON as image 1')
    expect(JSON.stringify(described)).not.toContain(png)
    expect(codeModelOutput({ result: '2', stdout: '', stderr: '' })).toEqual({
      type: 'json',
      value: { result: '2', stdout: '', stderr: '' },
    })
    expect(codeModelOutput({ error: 'boom' })).toEqual({ type: 'json', value: { error: 'boom' } })
  })
})
