// Bundles the chat page (src/page/app.tsx, with React, @ai-sdk/react and the AI SDK) into one browser
// script with esbuild, and the HTML that loads it. The server builds it in memory as it starts;
//   node examples/chat-branching/src/page/build.ts   # writes examples/chat-branching/dist/
// writes the same files, to serve them from anywhere else.
import { mkdir, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'

const here = dirname(fileURLToPath(import.meta.url))

/** The page's files: what GET / and GET /app.js answer. */
export interface ChatPage {
  html: string
  script: string
}

const STYLE = `
body { font: 15px/1.45 system-ui, sans-serif; margin: 0; background: #f6f6f4; color: #1d1d1b; }
main { max-width: 760px; margin: 0 auto; padding: 16px 20px 40px; }
h1 { font-size: 17px; font-weight: 600; margin: 4px 0 12px; }
nav button { margin-right: 6px; border: 1px solid #bbb; background: #fff; border-radius: 4px; padding: 3px 10px; }
nav button.selected { background: #1d1d1b; color: #fff; border-color: #1d1d1b; }
.messages { list-style: none; padding: 0; }
.message { background: #fff; border: 1px solid #dedcd6; border-radius: 6px; padding: 8px 12px; margin: 8px 0; position: relative; }
.message.user { background: #eef3fb; border-color: #c9d7ee; }
.role { font-size: 12px; color: #6b6a66; margin-right: 8px; }
.switcher { float: right; font-size: 13px; }
.switcher button { border: none; background: none; cursor: pointer; padding: 0 5px; font-size: 14px; }
.switcher button:disabled { color: #bbb; }
code { background: #f0efea; padding: 0 4px; border-radius: 3px; font-size: 13px; margin-right: 4px; }
.notice { font-size: 12px; color: #7a4b00; background: #fff6e0; border-radius: 4px; padding: 3px 6px; margin: 4px 0; }
.sees, .does, .checkpoint { font-size: 13px; color: #44433f; margin: 2px 0; }
.checkpoint { color: #8a8984; font-size: 12px; }
.text { margin: 4px 0; }
.message button[data-testid=edit], .message button[data-testid=regenerate] { font-size: 12px; margin-top: 4px; }
.composer { display: flex; gap: 6px; margin-top: 12px; }
.composer input { flex: 1; padding: 6px 8px; border: 1px solid #bbb; border-radius: 4px; font-size: 15px; }
.error { color: #a01515; margin: 6px 0; font-size: 13px; }
`

/** Builds the page: the bundle is minified, with React's production build. */
export async function buildChatPage(): Promise<ChatPage> {
  const result = await build({
    entryPoints: [join(here, 'app.tsx')],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'browser',
    target: 'es2023',
    jsx: 'automatic',
    minify: true,
    define: { 'process.env.NODE_ENV': '"production"' },
    logLevel: 'silent',
  })
  const script = result.outputFiles[0]!.text
  const html = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>sandkeep chat-branching</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>${STYLE}</style></head>
<body><div id="root"></div><script type="module" src="/app.js"></script></body>
</html>
`
  return { html, script }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const page = await buildChatPage()
  const out = join(here, '..', '..', 'dist')
  await mkdir(out, { recursive: true })
  await writeFile(join(out, 'index.html'), page.html)
  await writeFile(join(out, 'app.js'), page.script)
  console.log(`wrote ${out}/index.html and app.js (${Math.round(page.script.length / 1024)} KiB)`)
}
