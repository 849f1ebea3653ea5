import { describe, expect, it } from 'vitest'
import { renderResult } from './tool-text.js'

describe('renderResult', () => {
  it('puts the notice first and names the failing tool', () => {
    expect(renderResult('read_file', { notice: 'Notice: gone.', error: 'no such file', code: 'X' })).toBe(
      'notice: Notice: gone.\nerror: read_file failed: no such file',
    )
  })

  it('gives a code cell its labelled parts, without empty ones, and its error', () => {
    const text = renderResult('run_code', { result: '3', stdout: '', stderr: 'warn', error: 'NameError: x' })
    expect(text).toBe('result: 3\nstderr: warn\nerror: NameError: x')
    expect(renderResult('run_code', { result: null, stdout: '', stderr: '' })).toBe('(no output)')
  })

  it('shows rich outputs other than the result, an image as a note', () => {
    const text = renderResult('run_code', {
      result: '1',
      outputs: [
        { main: true, text: '1' },
        { main: false, image: { mediaType: 'image/png', base64: 'AA' } },
        { main: false, text: '<b>x</b>', format: 'html' },
      ],
      stdout: '',
      stderr: '',
    })
    expect(text).toBe('result: 1\noutput: (an image, not shown as text)\noutput: <b>x</b>')
  })

  it('renders files, listings, writes, URLs and background commands as short text', () => {
    expect(renderResult('read_file', { path: '/a', content: 'hi\n', totalLines: 1 })).toBe('hi\n')
    expect(renderResult('list_files', { path: '/a', entries: [] })).toBe('(empty)')
    expect(
      renderResult('list_files', {
        path: '/a',
        entries: [
          { path: 'b', type: 'file' },
          { path: 'c', type: 'dir' },
        ],
      }),
    ).toBe('b\nc')
    expect(renderResult('write_file', { path: '/a', bytes: 3 })).toBe('wrote 3 bytes to /a')
    expect(renderResult('preview_url', { url: 'http://x', port: 3000, listening: true, note: '' })).toBe(
      'http://x',
    )
    expect(
      renderResult('preview_url', { url: 'http://x', port: 3000, listening: false, note: 'not yet' }),
    ).toBe('http://x\nnote: not yet')
    expect(renderResult('run_command', { background: true, pid: 12, note: 'runs on' })).toBe(
      'background: pid 12\nnote: runs on',
    )
  })
})
