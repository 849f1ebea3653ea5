// Host memory under concurrent uploads (they stream): the built host runs as its own process (the bin);
// this client sends N concurrent uploads of SIZE MiB each through the real e2b SDK and samples the host's
// VmRSS from /proc every 50 ms. The upload bodies are generated as streams, so the client holds little.
// Imports the BUILT package: run `pnpm --filter @sandkeep/local-e2b build` first.
// Usage: node bench/upload-rss.mjs [--uploads 8] [--mib 250] [--multipart]
//   --multipart sends each body as an ArrayBuffer (the SDK's default multipart form) instead of a stream.
import { readFileSync } from 'node:fs'
import { Sandbox } from 'e2b'
import { startHostProcess } from './host-process.mjs'

const args = process.argv.slice(2)
const option = (name, fallback) => Number(args[args.indexOf(name) + 1]) || fallback
const uploads = option('--uploads', 8)
const mib = option('--mib', 250)
const multipart = args.includes('--multipart')

function rssMiB(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  return Math.round(Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024)
}

function body(size) {
  if (multipart) return new Uint8Array(size).fill(7).buffer
  const chunk = new Uint8Array(1024 * 1024).fill(7)
  let sent = 0
  return new ReadableStream({
    pull(controller) {
      if (sent >= size) return controller.close()
      controller.enqueue(chunk.slice(0, Math.min(chunk.length, size - sent)))
      sent += chunk.length
    },
  })
}

const host = await startHostProcess()
try {
  const sandbox = await Sandbox.create({ ...host.opts, requestTimeoutMs: 600_000 })
  const before = rssMiB(host.pid)
  let peak = before
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssMiB(host.pid))
  }, 50)
  const started = performance.now()
  const results = await Promise.allSettled(
    Array.from({ length: uploads }, (_, index) =>
      sandbox.files.write(`/home/user/upload-${index}.bin`, body(mib * 1024 * 1024), {
        requestTimeoutMs: 600_000,
      }),
    ),
  )
  clearInterval(sampler)
  const failed = results.filter((result) => result.status === 'rejected')
  console.log(
    JSON.stringify({
      uploads,
      mibEach: mib,
      body: multipart ? 'multipart ArrayBuffer' : 'octet-stream ReadableStream',
      hostRssBeforeMiB: before,
      hostRssPeakMiB: peak,
      seconds: Math.round((performance.now() - started) / 100) / 10,
      failed: failed.length,
      ...(failed.length ? { firstError: String(failed[0].reason).slice(0, 200) } : {}),
    }),
  )
  await sandbox.kill()
} finally {
  await host.close()
}
