import { describe, expect, it } from 'vitest'
import { ConnectError, decodeEnvelopes, encodeEnvelope, parseJson } from './connect-protocol.js'

describe('Connect envelopes', () => {
  it('round-trips messages and skips the end-stream frame', () => {
    const body = Buffer.concat([
      encodeEnvelope({ a: 1 }),
      encodeEnvelope({ b: 'two' }),
      encodeEnvelope({}, 0x02),
    ])
    expect(decodeEnvelopes(body)).toEqual([{ a: 1 }, { b: 'two' }])
    const frame = encodeEnvelope({ x: true })
    expect(frame.readUInt8(0)).toBe(0)
    expect(frame.readUInt32BE(1)).toBe(frame.length - 5)
  })
  it('refuses truncated, compressed and non-JSON input with invalid_argument', () => {
    const good = encodeEnvelope({ a: 1 })
    for (const bad of [
      good.subarray(0, 3),
      good.subarray(0, good.length - 1),
      Buffer.from([1, 0, 0, 0, 2, 123, 125]),
    ]) {
      expect(() => decodeEnvelopes(bad)).toThrow(ConnectError)
    }
    expect(() => parseJson(Buffer.from('{nope'))).toThrow(ConnectError)
    expect(parseJson(Buffer.alloc(0))).toEqual({})
  })
})
