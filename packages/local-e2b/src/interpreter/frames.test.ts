import { describe, expect, it } from 'vitest'
import { createFrameReader, type KernelMessage } from './frames.js'

function collect(nonce: string) {
  const messages: KernelMessage[] = []
  let raw = ''
  const reader = createFrameReader({
    nonce,
    onMessage: (message) => messages.push(message),
    onRaw: (text) => {
      raw += text
    },
  })
  return { reader, messages, raw: () => raw }
}

const marker = (nonce: string) => `\x1e${nonce}:`

describe('createFrameReader', () => {
  it('separates messages from raw output, whatever the chunking', () => {
    const nonce = 'abc123'
    const stream = Buffer.from(
      `raw before ${marker(nonce)}{"t":"stdout","text":"a\\nb"}\n` +
        `héllo wörld\n${marker(nonce)}{"t":"done","id":1}\nraw after\x1e not a marker`,
      'utf8',
    )
    for (const size of [1, 2, 3, 7, stream.length]) {
      const { reader, messages, raw } = collect(nonce)
      for (let offset = 0; offset < stream.length; offset += size)
        reader.push(stream.subarray(offset, offset + size))
      reader.end()
      expect(messages).toEqual([
        { t: 'stdout', text: 'a\nb' },
        { t: 'done', id: 1 },
      ])
      expect(raw()).toBe('raw before héllo wörld\nraw after\x1e not a marker')
    }
  })

  it('ignores look-alike markers with another nonce (user output cannot forge messages)', () => {
    const { reader, messages, raw } = collect('real')
    reader.push(Buffer.from(`${marker('fake')}{"t":"done","id":1}\n`))
    reader.end()
    expect(messages).toEqual([])
    expect(raw()).toBe(`${marker('fake')}{"t":"done","id":1}\n`)
  })

  it('drops a message cut off by the next one and resyncs', () => {
    const { reader, messages } = collect('n')
    reader.push(Buffer.from(`${marker('n')}{"t":"stdout","te${marker('n')}{"t":"done","id":2}\n`))
    expect(messages).toEqual([{ t: 'done', id: 2 }])
  })

  it('drops a cut message and resyncs whatever the chunking, the new marker split across chunks too', () => {
    const stream = Buffer.from(`${marker('n')}{"t":"stdout","te${marker('n')}{"t":"done","id":2}\nafter`)
    for (const size of [1, 2, 3, 5, 7]) {
      const { reader, messages, raw } = collect('n')
      for (let offset = 0; offset < stream.length; offset += size)
        reader.push(stream.subarray(offset, offset + size))
      reader.end()
      expect(messages, `chunks of ${size}`).toEqual([{ t: 'done', id: 2 }])
      expect(raw(), `chunks of ${size}`).toBe('after')
    }
  })

  it('reads a message of megabytes that arrives in pipe-sized chunks as one message', () => {
    const text = 'x'.repeat(4 * 1024 * 1024)
    const stream = Buffer.from(
      `${marker('n')}${JSON.stringify({ t: 'stdout', text })}\n${marker('n')}{"t":"done"}\n`,
    )
    const { reader, messages } = collect('n')
    for (let offset = 0; offset < stream.length; offset += 65_536)
      reader.push(stream.subarray(offset, offset + 65_536))
    expect(messages).toHaveLength(2)
    expect(messages[0]?.text).toBe(text)
    expect(messages[1]).toEqual({ t: 'done' })
  })

  it('drops malformed JSON and messages without a type', () => {
    const { reader, messages } = collect('n')
    reader.push(
      Buffer.from(
        `${marker('n')}{nope\n${marker('n')}[1]\n${marker('n')}{"x":1}\n${marker('n')}{"t":"ok"}\n`,
      ),
    )
    expect(messages).toEqual([{ t: 'ok' }])
  })
})
