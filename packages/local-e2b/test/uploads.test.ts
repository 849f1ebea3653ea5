// Uploads stream to disk, so host memory stays flat, under a per-request cap and a host-wide budget. The
// memory figure (8 concurrent 250 MiB uploads) is in the README and bench/upload-rss.mjs, not a timed test.
import { createHash, randomBytes } from 'node:crypto'
import { readdirSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import { join } from 'node:path'
import { Sandbox } from 'e2b'
import { describe, expect, it } from 'vitest'
import { useTestHost } from './helpers.js'

const MiB = 1024 * 1024
const sha = (data: Uint8Array) => createHash('sha256').update(data).digest('hex')

describe('streamed uploads with caps', () => {
  const t = useTestHost({ maxUploadBytes: 2 * MiB, maxConcurrentUploadBytes: 2 * MiB })

  it('writes the right bytes for multipart, octet-stream and stream uploads', async () => {
    const sandbox = await Sandbox.create({ ...t.opts })
    const data = new Uint8Array(randomBytes(MiB + 12345))
    await sandbox.files.write('/home/user/up/multipart.bin', data.buffer as ArrayBuffer)
    await sandbox.files.write('/home/user/up/octet.bin', data.buffer as ArrayBuffer, { useOctetStream: true })
    await sandbox.files.write('/home/user/up/gzip.bin', data.buffer as ArrayBuffer, { gzip: true })
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let offset = 0; offset < data.length; offset += 64 * 1024)
          controller.enqueue(data.slice(offset, offset + 64 * 1024))
        controller.close()
      },
    })
    await sandbox.files.write('/home/user/up/stream.bin', stream)
    await sandbox.files.write([
      { path: '/home/user/up/a.txt', data: 'first' },
      { path: '/home/user/up/b.txt', data: 'second' },
    ])
    for (const name of ['multipart.bin', 'octet.bin', 'gzip.bin', 'stream.bin']) {
      const back = await sandbox.files.read(`/home/user/up/${name}`, { format: 'bytes' })
      expect(sha(back), name).toBe(sha(data))
    }
    expect(await sandbox.files.read('/home/user/up/a.txt')).toBe('first')
    expect(await sandbox.files.read('/home/user/up/b.txt')).toBe('second')
  }, 60_000)

  it('refuses an upload past maxUploadBytes with a clear error and leaves no partial file', async () => {
    const sandbox = await Sandbox.create({ ...t.opts })
    const big = new Uint8Array(randomBytes(3 * MiB))
    await sandbox.files.write('/home/user/kept.txt', 'old content')
    for (const options of [{}, { useOctetStream: true }, { gzip: true }]) {
      await expect(
        sandbox.files.write('/home/user/big.bin', big.buffer as ArrayBuffer, options),
      ).rejects.toThrow(/larger than the host's limit of 2097152 bytes/)
      await expect(
        sandbox.files.write('/home/user/kept.txt', big.buffer as ArrayBuffer, options),
      ).rejects.toThrow(/limit/)
    }
    // A stream has no length up front: it is cut off once past the cap.
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let offset = 0; offset < big.length; offset += 256 * 1024)
          controller.enqueue(big.slice(offset, offset + 256 * 1024))
        controller.close()
      },
    })
    await expect(sandbox.files.write('/home/user/big.bin', stream)).rejects.toThrow(/limit/)
    expect(await sandbox.files.exists('/home/user/big.bin')).toBe(false)
    expect(await sandbox.files.read('/home/user/kept.txt')).toBe('old content')
    const home = join(t.host.stateDir, 'sandboxes', sandbox.sandboxId, 'home/user')
    expect(readdirSync(home).filter((name) => name.startsWith('.sandkeep-upload-'))).toEqual([])
    expect(t.host.getSandbox(sandbox.sandboxId)).toBeDefined()
  }, 60_000)

  it('answers 429 with Retry-After past the concurrent upload budget', async () => {
    const sandbox = await Sandbox.create({ ...t.opts })
    const token = (sandbox as unknown as { envdAccessToken: string }).envdAccessToken
    const url = new URL(`${t.opts.sandboxUrl}/files?path=/home/user/slow.bin`)
    const headers = {
      'content-type': 'application/octet-stream',
      'e2b-sandbox-id': sandbox.sandboxId,
      'e2b-sandbox-port': '49983',
      'x-access-token': token,
    }
    // One upload declares 1.5 MiB and sends half: its reservation holds most of the 2 MiB budget.
    const first = httpRequest(url, { method: 'POST', headers: { ...headers, 'content-length': 1.5 * MiB } })
    const firstDone = new Promise<number>((resolve) =>
      first.on('response', (res) => resolve(res.statusCode ?? 0)),
    )
    first.write(Buffer.alloc(0.75 * MiB, 1))
    await new Promise((resolve) => setTimeout(resolve, 200))
    const second = await fetch(url, {
      method: 'POST',
      headers,
      body: new Uint8Array(MiB),
    })
    expect(second.status).toBe(429)
    expect(second.headers.get('retry-after')).toBe('1')
    expect(((await second.json()) as { message: string }).message).toMatch(/retry/)
    first.end(Buffer.alloc(0.75 * MiB, 1))
    expect(await firstDone).toBe(200)
    // The budget is released once the first upload is done.
    await sandbox.files.write('/home/user/after.bin', new Uint8Array(MiB).buffer as ArrayBuffer)
    expect((await sandbox.files.getInfo('/home/user/after.bin')).size).toBe(MiB)
  }, 60_000)
})
