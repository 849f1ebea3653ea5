// The scripted client's run: a chat sends messages, regenerates its last answer, edits an earlier message
// and is forked, and both chats go on. Each answer that changes something first looks at the sandbox, and
// the run prints what it saw, so the output shows the state each answer started from.
import { randomUUID } from 'node:crypto'
import { sandkeepMetadataOf } from '@sandkeep/ai-sdk'
import type { UIMessage } from 'ai'
import { NodeChat } from './client.ts'
import { inspect } from './script.ts'

/** What one request's answer saw and did. */
export interface Observation {
  /** 'shop' or 'fork'. */
  chat: string
  /** What the user did: the message sent, or the regenerate, the edit. */
  action: string
  /** The variables the answer found set (a Python dict's repr), when it looked. */
  variables?: string
  /** The .txt files it found, when it looked. */
  files?: string
  /** The notice the first tool result carried (after a rewind or fork). */
  notice?: string
  /** The session turn of the answer (from its metadata). */
  turn?: number
  /** The answer's text. */
  text: string
}

type ToolPart = { type: string; input?: Record<string, unknown>; output?: Record<string, unknown> }

/** What the last assistant message of `chat` saw and did. */
function observe(chat: NodeChat, label: string, action: string): Observation {
  if (chat.error) throw new Error(`${label}: ${chat.error.message}`)
  const answer = chat.lastMessage
  if (answer?.role !== 'assistant') throw new Error(`${label}: no answer`)
  const tools = answer.parts.filter((part) => part.type.startsWith('tool-')) as ToolPart[]
  const output = (name: string, input: Record<string, unknown>) =>
    tools.find((part) => part.type === `tool-${name}` && JSON.stringify(part.input) === JSON.stringify(input))
      ?.output
  const [variablesCall, filesCall] = inspect
  const variables = output('runCode', variablesCall!.input)?.result
  const files = output('runCommand', filesCall!.input)?.stdout
  const notice = tools.map((part) => part.output?.notice).find((value) => typeof value === 'string')
  const turn = sandkeepMetadataOf(answer)?.turn
  return {
    chat: label,
    action,
    ...(typeof variables === 'string' ? { variables } : {}),
    ...(typeof files === 'string' ? { files: files.trim() || '(none)' } : {}),
    ...(typeof notice === 'string' ? { notice } : {}),
    ...(turn === undefined ? {} : { turn }),
    text: answer.parts.map((part) => (part.type === 'text' ? part.text : '')).join(''),
  }
}

/** The lines printed for one observation, with what the answer did (its calls that set state). */
function describe(observation: Observation, answer: UIMessage | undefined): string[] {
  const pad = ' '.repeat(8)
  const lines = [`${observation.chat.padEnd(6)}> ${observation.action}`]
  if (observation.notice) lines.push(`${pad}notice: ${observation.notice}`)
  if (observation.variables !== undefined)
    lines.push(`${pad}sees   ${observation.variables}  files: ${observation.files}`)
  const setting = ((answer?.parts ?? []) as ToolPart[])
    .filter((part) => part.input?.setup === true)
    .map((part) =>
      part.type === 'tool-runCode' ? `${part.input?.code}` : `writes ${String(part.input?.path)}`,
    )
  if (setting.length > 0) lines.push(`${pad}does   ${setting.join('; ')}`)
  const sandkeep = answer ? sandkeepMetadataOf(answer) : undefined
  const checkpoint = sandkeep
    ? `  [turn ${sandkeep.turn}, checkpoint: ${sandkeep.snapshotId ? 'snapshot' : 'journal only'}, ${sandkeep.journalLength} journal steps]`
    : ''
  lines.push(`${pad}says   ${observation.text}${checkpoint}`)
  return lines
}

/**
 * Runs the scenario against the example server at `url`, printing each exchange with `log`; returns what
 * each answer saw. The conversation ids are fresh for each run.
 */
export async function runScenario(url: string, log: (line: string) => void = console.log) {
  const observations: Observation[] = []
  const run = async (chat: NodeChat, label: string, action: string, request: () => Promise<void>) => {
    await request()
    const observation = observe(chat, label, action)
    observations.push(observation)
    for (const line of describe(observation, chat.lastMessage)) log(line)
  }
  const send = (chat: NodeChat, label: string, text: string) =>
    run(chat, label, text, () => chat.sendMessage({ text }))

  const shop = new NodeChat(url, `shop-${randomUUID()}`)
  await send(shop, 'shop', 'Load the prices.')
  await send(shop, 'shop', 'Apply a 10% discount.')
  await run(shop, 'shop', '(regenerate the last answer)', () => shop.regenerate())
  await send(shop, 'shop', 'Add 5 for shipping.')
  const second = shop.messages.filter((message) => message.role === 'user')[1]!
  await run(shop, 'shop', '(edit message 2 to "Apply a 20% discount.")', () =>
    shop.sendMessage({ text: 'Apply a 20% discount.', messageId: second.id }),
  )

  const forkId = `shop-fork-${randomUUID()}`
  const response = await fetch(`${url}/api/fork`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ id: shop.id, newId: forkId, messages: shop.messages }),
  })
  const forked = (await response.json()) as { atTurn?: number; source?: string; error?: string }
  if (!response.ok) throw new Error(`fork: ${forked.error}`)
  log(`fork  = forked the chat at turn ${forked.atTurn} (its sandbox from the ${forked.source})`)
  // The fork's copy of the messages drops their sandkeep metadata: its ids are the source conversation's
  // checkpoints, which the fork's turns would refuse; the fork's first turn goes on from the fork point.
  const copy = structuredClone(shop.messages).map((message) => {
    const { sandkeep: _, ...rest } = (message.metadata ?? {}) as Record<string, unknown>
    return { ...message, metadata: rest }
  })
  const fork = new NodeChat(url, forkId, copy)

  await send(fork, 'fork', 'Add 20% tax.')
  await send(shop, 'shop', 'Switch to euros.')
  await send(fork, 'fork', 'What is set?')
  await send(shop, 'shop', 'What is set?')
  return { observations, conversations: [shop.id, forkId] }
}
