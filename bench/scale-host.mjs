// A local-e2b host in a process of its own for the scale bench (so its RSS is its own, not the client's): reads
// its options as JSON from argv[2], the API key from SANDKEEP_BENCH_API_KEY, prints its URLs and pid as one JSON
// line, and closes on SIGTERM.
import { startLocalE2B } from '@sandkeep/local-e2b'

const options = JSON.parse(process.argv[2] ?? '{}')
const host = await startLocalE2B({ ...options, apiKey: process.env.SANDKEEP_BENCH_API_KEY, logger: () => {} })
process.stdout.write(
  `${JSON.stringify({ apiUrl: host.apiUrl, sandboxUrl: host.sandboxUrl, isolation: host.isolation, pid: process.pid })}\n`,
)
process.once('SIGTERM', () => {
  host.close().then(
    () => process.exit(0),
    () => process.exit(1),
  )
})
