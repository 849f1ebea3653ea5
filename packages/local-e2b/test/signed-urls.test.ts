// Signed file URLs: `downloadUrl` / `uploadUrl` of the unmodified SDK, fetched with no header at all, as a
// browser or a curl would. The signature and its expiry are checked as envd checks them, with envd's 401s.
import { Sandbox } from 'e2b'
import { describe, expect, it } from 'vitest'
import { useTestHost } from './helpers.js'

describe('signed file URLs', () => {
  const t = useTestHost()

  it('downloadUrl with an expiry reads the file; past its expiry, or altered, it is refused with 401', async () => {
    const sandbox = await Sandbox.create(t.opts)
    try {
      await sandbox.files.write('hello.txt', 'hello world')
      const url = await sandbox.downloadUrl('hello.txt', { useSignatureExpiration: 10_000 })
      expect(new URL(url).searchParams.get('signature')).toMatch(/^v1_[A-Za-z0-9+/]+$/)
      const ok = await fetch(url)
      expect(ok.status).toBe(200)
      expect(await ok.text()).toBe('hello world')
      const unlimited = await fetch(await sandbox.downloadUrl('/home/user/hello.txt'))
      expect(await unlimited.text()).toBe('hello world')

      const expired = await fetch(await sandbox.downloadUrl('hello.txt', { useSignatureExpiration: -10_000 }))
      expect(expired.status).toBe(401)
      expect(await expired.json()).toEqual({ code: 401, message: 'signature is already expired' })

      const altered = new URL(url)
      altered.searchParams.set('path', '/home/user/other.txt')
      const wrong = await fetch(altered)
      expect(wrong.status).toBe(401)
      expect(await wrong.json()).toEqual({ code: 401, message: 'invalid signature' })
    } finally {
      await sandbox.kill()
    }
  })

  it('uploadUrl takes a multipart POST with no header and writes the file', async () => {
    const sandbox = await Sandbox.create(t.opts)
    try {
      const url = await sandbox.uploadUrl('uploaded.txt', { useSignatureExpiration: 10_000 })
      const form = new FormData()
      form.append('file', new Blob(['file content']), 'uploaded.txt')
      const response = await fetch(url, { method: 'POST', body: form })
      expect(response.status).toBe(200)
      expect(await response.json()).toEqual([
        { name: 'uploaded.txt', path: '/home/user/uploaded.txt', type: 'file' },
      ])
      expect(await sandbox.files.read('uploaded.txt')).toBe('file content')
      // A plain string part (no file name) is the content too; the URL's path names the file.
      const plain = new FormData()
      plain.append('file', 'plain field')
      const other = await sandbox.uploadUrl('plain.txt', { useSignatureExpiration: 10_000 })
      expect((await fetch(other, { method: 'POST', body: plain })).status).toBe(200)
      expect(await sandbox.files.read('plain.txt')).toBe('plain field')
      // A read signature does not write, and a write signature does not read.
      const readUrl = new URL(await sandbox.downloadUrl('uploaded.txt'))
      expect((await fetch(readUrl, { method: 'POST', body: form })).status).toBe(401)
      expect((await fetch(url)).status).toBe(401)
      const expired = await fetch(await sandbox.uploadUrl('late.txt', { useSignatureExpiration: -100_000 }), {
        method: 'POST',
        body: form,
      })
      expect(expired.status).toBe(401)
      expect(await expired.json()).toEqual({ code: 401, message: 'signature is already expired' })
      expect(await sandbox.files.exists('late.txt')).toBe(false)
    } finally {
      await sandbox.kill()
    }
  })

  it("one sandbox's signature opens none of another's files; envd's own answers without one", async () => {
    const first = await Sandbox.create(t.opts)
    const second = await Sandbox.create(t.opts)
    try {
      await second.files.write('secret.txt', 'second only')
      const signedByFirst = new URL(await first.downloadUrl('secret.txt'))
      const routed = (extra: Record<string, string>) =>
        fetch(signedByFirst, {
          headers: { 'e2b-sandbox-id': second.sandboxId, 'e2b-sandbox-port': '49983', ...extra },
        })
      const crossed = await routed({})
      expect(crossed.status).toBe(401)
      expect(await crossed.json()).toEqual({ code: 401, message: 'invalid signature' })
      const noSignature = await fetch(`${t.host.sandboxUrl}/files?path=secret.txt`, {
        headers: { 'e2b-sandbox-id': second.sandboxId, 'e2b-sandbox-port': '49983' },
      })
      expect(await noSignature.json()).toEqual({ code: 401, message: 'missing signature query parameter' })
      const wrongToken = await routed({ 'x-access-token': 'not-the-token' })
      expect(await wrongToken.json()).toEqual({
        code: 401,
        message: 'access token present in header but does not match',
      })
    } finally {
      await first.kill()
      await second.kill()
    }
  })
})
