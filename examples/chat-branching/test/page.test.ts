// The chat page (src/page/app.tsx: useChat from @ai-sdk/react, bundled by esbuild) driven in Debian's
// headless chromium through puppeteer-core, against the example server on a local-e2b host: regenerate,
// switch back to the first answer, go on, edit an older message, fork. After each step the test reads the
// sandbox state the page shows (what the answer's tool calls found in the sandbox). No browser is
// downloaded: without chromium at CHROMIUM_PATH (default /usr/bin/chromium) the test is skipped.
// CHAT_BRANCHING_SCREENSHOTS=<dir> saves a PNG after each step (the README's come from there).
import { existsSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import puppeteer, { type Browser, type Page } from 'puppeteer-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { start } from '../src/main.ts'

const chromium = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const absent = !existsSync(chromium)
const screenshots = process.env.CHAT_BRANCHING_SCREENSHOTS
const title = absent
  ? `chat page in headless chromium (SKIPPED: no chromium at ${chromium}; apt-get install -y chromium, or set CHROMIUM_PATH)`
  : 'chat page in headless chromium'

/** What the page shows of one message. */
interface Shown {
  role: string
  text: string
  sees?: string
  files?: string
  notice?: string
  position?: string
  checkpoint?: string
}

describe.skipIf(absent)(title, () => {
  let app: Awaited<ReturnType<typeof start>>
  let browser: Browser
  let page: Page

  beforeAll(async () => {
    app = await start(0)
    browser = await puppeteer.launch({
      executablePath: chromium,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
    })
    page = await browser.newPage()
    await page.setViewport({ width: 820, height: 900 })
    page.on('pageerror', (error) => console.error('page error:', error))
    await page.goto(`${app.url}/`)
    await page.waitForSelector('[data-testid=chat][data-status=ready]')
    if (screenshots) await mkdir(screenshots, { recursive: true })
  }, 120_000)

  afterAll(async () => {
    await browser?.close()
    if (app) {
      const { sessions } = await app.sessions.listSessions().catch(() => ({ sessions: [] }))
      for (const { conversationId } of sessions) await app.sessions.endSession(conversationId).catch(() => {})
      await app.close()
    }
  })

  /** The messages of the chat shown. */
  const shown = (): Promise<Shown[]> =>
    page.$$eval('[data-testid=message]', (items) =>
      items.map((item) => {
        const read = (id: string) => {
          const found = item.querySelector(`[data-testid=${id}]`)
          return found ? (found.textContent ?? '') : undefined
        }
        const fields: Record<string, string | undefined> = {
          role: item.getAttribute('data-role') ?? '',
          text: read('text') ?? '',
          sees: read('sees'),
          files: read('files'),
          notice: read('notice'),
          position: read('position'),
          checkpoint: read('checkpoint'),
        }
        return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined))
      }),
    ) as unknown as Promise<Shown[]>

  /** Waits until the chat is ready with `count` messages, the last one's text `last`; returns them. */
  async function settled(count: number, last: string): Promise<Shown[]> {
    await page.waitForFunction(
      (count, last) => {
        const chat = document.querySelector('[data-testid=chat]')
        const items = [...document.querySelectorAll('[data-testid=message]')]
        const error = document.querySelector('[data-testid=error], [data-testid=fork-error]')
        if (error) return true
        return (
          chat?.getAttribute('data-status') === 'ready' &&
          items.length === count &&
          items.at(-1)?.querySelector('[data-testid=text]')?.textContent === last
        )
      },
      { timeout: 90_000 },
      count,
      last,
    )
    const error = await page.$eval(
      'body',
      (body) => body.querySelector('[data-testid=error], [data-testid=fork-error]')?.textContent ?? null,
    )
    if (error) throw new Error(`the page shows an error: ${error}`)
    return shown()
  }

  async function send(text: string) {
    await page.type('[data-testid=input]', text)
    await page.click('[data-testid=send]')
  }

  async function shot(name: string) {
    if (screenshots) await page.screenshot({ path: join(screenshots, `${name}.png`) as `${string}.png` })
  }

  /** The button `id` inside the message at `index`. */
  const inMessage = (index: number, id: string) =>
    `[data-testid=message][data-index="${index}"] [data-testid=${id}]`

  it('regenerate, switch back to the first answer, go on, edit an older message, fork', async () => {
    await send('Set x to 1.')
    let messages = await settled(2, 'x is 1.')
    expect(messages[1]).toMatchObject({ sees: '{}', files: '(none)' })

    await send('Set x to 2.')
    messages = await settled(4, 'x is 2.')
    expect(messages[3]).toMatchObject({ sees: "{'x': 1}", files: 'x.txt' })

    // Regenerate answer 2: it starts from turn 1's state (x = 1), not from the answer it replaces (x = 2).
    await page.click('[data-testid=regenerate]')
    messages = await settled(4, 'x is 20.')
    expect(messages[3]).toMatchObject({ sees: "{'x': 1}", position: '2/2' })
    expect(messages[3]!.notice).toMatch(/rewound|restored/)
    await shot('1-regenerated')

    // Switch back to the first answer 2 (x = 2), and go on from it: the sandbox follows the branch shown.
    await page.click(inMessage(3, 'prev'))
    await page.waitForFunction(
      (selector) => document.querySelector(selector)?.textContent === 'x is 2.',
      {},
      `[data-testid=message][data-index="3"] [data-testid=text]`,
    )
    expect((await shown())[3]).toMatchObject({ text: 'x is 2.', position: '1/2' })
    await send('What is set?')
    messages = await settled(6, 'That is what this chat has set.')
    // Before the checkpoint tree, this answer found x = 20: the discarded branch's state.
    expect(messages[5]).toMatchObject({ sees: "{'x': 2}", files: 'x.txt' })
    expect(messages[3]).toMatchObject({ text: 'x is 2.', position: '1/2' })
    await shot('2-switched-back-and-went-on')

    // Edit message 2 (the older user message): the answer starts from turn 1's state again.
    await page.click(inMessage(2, 'edit'))
    const input = await page.waitForSelector(inMessage(2, 'edit-input'))
    await input!.click({ count: 3 })
    await input!.type('Set x to 3.')
    await page.click(inMessage(2, 'edit-save'))
    messages = await settled(4, 'x is 3.')
    expect(messages[2]).toMatchObject({ text: 'Set x to 3.', position: '2/2' })
    expect(messages[3]).toMatchObject({ sees: "{'x': 1}" })
    await shot('3-edited')

    // Fork the chat here: the fork's sandbox starts from this branch's state (x = 3).
    await page.click('[data-testid=fork]')
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=tab]').length === 2)
    await page.waitForFunction(() => document.querySelector('nav button.selected')?.textContent === 'fork 1')
    await send('What is set?')
    messages = await settled(6, 'That is what this chat has set.')
    expect(messages[5]).toMatchObject({ sees: "{'x': 3}", files: 'x.txt' })
    expect(messages[5]!.notice).toMatch(/forked/)
    await shot('4-forked')

    // The original chat is where it was; its first message 2 brings back that branch's latest line (the
    // regenerated answer), whose "< 1/2 >" leads on to the first answer 2 and the message after it.
    await page.click('[data-testid=tab]')
    await settled(4, 'x is 3.')
    await page.click(inMessage(2, 'prev'))
    messages = await settled(4, 'x is 20.')
    expect(messages[3]).toMatchObject({ sees: "{'x': 1}", position: '2/2' })
    await page.click(inMessage(3, 'prev'))
    messages = await settled(6, 'That is what this chat has set.')
    expect(messages[3]).toMatchObject({ text: 'x is 2.', position: '1/2' })
    expect(messages[5]).toMatchObject({ sees: "{'x': 2}" })
  }, 420_000)
})
