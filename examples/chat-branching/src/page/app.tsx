// The example's chat page: the AI SDK's `useChat` (from @ai-sdk/react) over its DefaultChatTransport, so
// every button sends exactly what a production useChat app sends. A chat is a line of messages in
// useChat; the page keeps the tree around it: every line a request finished on is remembered, and the
// lines that share a message's history are that message's alternatives, shown as "< i/n >". Switching
// only changes the messages shown; the next request sends that line, and the server's `branchFromMessages`
// reads its last checkpoint id from the answers' metadata and restores the sandbox to it.
import { Chat, useChat } from '@ai-sdk/react'
import { DefaultChatTransport, type UIMessage } from 'ai'
import { StrictMode, useEffect, useState } from 'react'
import { createRoot } from 'react-dom/client'

/** One chat of the page: the original, or a fork of it. */
interface ChatEntry {
  chat: Chat<UIMessage>
  label: string
  /** Every line of messages a request finished on, in the order they were made. */
  lines: UIMessage[][]
  /** For a fork: how many messages it copied (those name the source's checkpoints, not its own). */
  copied: number
}

/**
 * The messages a fork starts with: the source's, without their sandkeep metadata, whose checkpoint ids
 * are the source conversation's (the fork's first turn goes on from the fork's head: the fork point).
 */
function forkCopy(messages: UIMessage[]): UIMessage[] {
  return structuredClone(messages).map((message) => {
    const { sandkeep: _, ...rest } = (message.metadata ?? {}) as Record<string, unknown>
    return { ...message, metadata: rest }
  })
}

type ToolPart = {
  type: string
  state?: string
  input?: Record<string, unknown>
  output?: Record<string, unknown>
}
type SandkeepMetadata = { checkpoint?: unknown; turn?: unknown; snapshotId?: unknown }

const textOf = (message: UIMessage) =>
  message.parts.map((part) => (part.type === 'text' ? part.text : '')).join('')

/** What makes a message itself: an edit keeps the user message's id and changes its text. */
const keyOf = (message: UIMessage) =>
  message.role === 'user' ? `${message.id}\u0000${textOf(message)}` : message.id

const prefixKey = (messages: readonly UIMessage[], length: number) =>
  messages.slice(0, length).map(keyOf).join('\u0001')

function newChat(id: string, messages: UIMessage[] = []): Chat<UIMessage> {
  return new Chat<UIMessage>({ id, messages, transport: new DefaultChatTransport({ api: '/api/chat' }) })
}

const firstAt = (order: string[], key: string) => order.indexOf(key)

/**
 * Remembers `messages` as a line, the lines kept in the order they were made: a line it extends is
 * replaced in place, a known one is left as it is, a new one goes last.
 */
function remember(lines: UIMessage[][], messages: UIMessage[]): UIMessage[][] {
  const key = prefixKey(messages, messages.length)
  const extended = lines.findIndex(
    (line) =>
      line.length <= messages.length && prefixKey(messages, line.length) === prefixKey(line, line.length),
  )
  if (extended === -1) return [...lines, messages]
  if (prefixKey(lines[extended]!, lines[extended]!.length) === key) return lines
  return lines.with(extended, messages)
}

/** The alternatives at position `index` of `messages`: the keys found there on lines with its history. */
function alternatives(lines: UIMessage[][], messages: UIMessage[], index: number): string[] {
  const history = prefixKey(messages, index)
  const keys: string[] = []
  for (const line of lines) {
    if (line.length <= index || prefixKey(line, index) !== history) continue
    const key = keyOf(line[index]!)
    if (!keys.includes(key)) keys.push(key)
  }
  // In the order they were made: the line made first is where each of them first appears.
  const order = lines.flatMap((line) => line.map(keyOf))
  return keys.sort((a, b) => firstAt(order, a) - firstAt(order, b))
}

function Switcher(props: { keys: string[]; current: string; onPick: (key: string) => void }) {
  const { keys, current, onPick } = props
  if (keys.length < 2) return null
  const at = keys.indexOf(current)
  return (
    <span className="switcher" data-testid="switcher">
      <button type="button" data-testid="prev" disabled={at <= 0} onClick={() => onPick(keys[at - 1]!)}>
        {'<'}
      </button>
      <span data-testid="position">
        {at + 1}/{keys.length}
      </span>
      <button
        type="button"
        data-testid="next"
        disabled={at >= keys.length - 1}
        onClick={() => onPick(keys[at + 1]!)}
      >
        {'>'}
      </button>
    </span>
  )
}

/** An answer's tool calls, read back: what it saw in the sandbox, what it set, the notice it was given. */
function AnswerBody({ message }: { message: UIMessage }) {
  const tools = message.parts.filter((part) => part.type.startsWith('tool-')) as ToolPart[]
  const sees = tools.find((part) => part.type === 'tool-runCode' && part.input?.setup !== true)?.output
    ?.result
  const files = tools.find((part) => part.type === 'tool-runCommand')?.output?.stdout
  const notice = tools.map((part) => part.output?.notice).find((value) => typeof value === 'string')
  const does = tools
    .filter((part) => part.input?.setup === true)
    .map((part) =>
      part.type === 'tool-runCode' ? String(part.input?.code) : `writes ${String(part.input?.path)}`,
    )
  const sandkeep = (message.metadata as { sandkeep?: SandkeepMetadata } | undefined)?.sandkeep
  return (
    <>
      {typeof notice === 'string' && (
        <div className="notice" data-testid="notice">
          {notice}
        </div>
      )}
      {typeof sees === 'string' && (
        <div className="sees">
          sandbox had <code data-testid="sees">{sees}</code> files{' '}
          <code data-testid="files">{typeof files === 'string' ? files.trim() || '(none)' : '?'}</code>
        </div>
      )}
      {does.length > 0 && (
        <div className="does">
          did{' '}
          {does.map((line) => (
            <code key={line}>{line}</code>
          ))}
        </div>
      )}
      <div className="text" data-testid="text">
        {textOf(message)}
      </div>
      {sandkeep && (
        <div className="checkpoint" data-testid="checkpoint">
          turn {String(sandkeep.turn)} · checkpoint <code>{String(sandkeep.checkpoint)}</code>
          {sandkeep.snapshotId ? ' (snapshot)' : ' (journal)'}
        </div>
      )}
    </>
  )
}

function UserBody(props: {
  message: UIMessage
  busy: boolean
  onEdit: ((text: string) => void) | undefined
}) {
  const { message, busy, onEdit } = props
  const [draft, setDraft] = useState<string | undefined>(undefined)
  if (draft === undefined) {
    return (
      <>
        <div className="text" data-testid="text">
          {textOf(message)}
        </div>
        {onEdit && (
          <button type="button" data-testid="edit" disabled={busy} onClick={() => setDraft(textOf(message))}>
            edit
          </button>
        )}
      </>
    )
  }
  return (
    <form
      onSubmit={(event) => {
        event.preventDefault()
        setDraft(undefined)
        onEdit?.(draft)
      }}
    >
      <input data-testid="edit-input" value={draft} onChange={(event) => setDraft(event.target.value)} />
      <button type="submit" data-testid="edit-save">
        save
      </button>
      <button type="button" onClick={() => setDraft(undefined)}>
        cancel
      </button>
    </form>
  )
}

function ChatView(props: {
  entry: ChatEntry
  onLine: (messages: UIMessage[]) => void
  onFork: (messages: UIMessage[]) => void
}) {
  const { entry, onLine, onFork } = props
  const { messages, setMessages, sendMessage, regenerate, status, error } = useChat({ chat: entry.chat })
  const [input, setInput] = useState('')
  const busy = status === 'submitted' || status === 'streaming'
  // A finished request, or a switch, makes the messages shown a line of the tree (`onLine` is a new
  // function at each render of the page, and remembering a known line changes nothing).
  // biome-ignore lint/correctness/useExhaustiveDependencies: only the chat's state is watched
  useEffect(() => {
    if (status === 'ready' && messages.length > 0) onLine(messages)
  }, [status, messages])
  const pick = (index: number, key: string) => {
    const history = prefixKey(messages, index)
    const line = entry.lines.findLast(
      (candidate) =>
        candidate.length > index &&
        prefixKey(candidate, index) === history &&
        keyOf(candidate[index]!) === key,
    )
    if (line) setMessages(line)
  }
  const lastAnswer = messages.findLastIndex((message) => message.role === 'assistant')
  return (
    <section className="chat" data-testid="chat" data-chat-id={entry.chat.id} data-status={status}>
      <ol className="messages">
        {messages.map((message, index) => (
          <li
            key={message.id}
            className={`message ${message.role}`}
            data-testid="message"
            data-role={message.role}
            data-index={index}
          >
            <span className="role">{message.role === 'user' ? 'you' : 'assistant'}</span>
            <Switcher
              keys={alternatives(entry.lines, messages, index)}
              current={keyOf(message)}
              onPick={(key) => pick(index, key)}
            />
            {message.role === 'user' ? (
              <UserBody
                message={message}
                busy={busy}
                // A fork's copied messages are the source's history: edit them in the source chat.
                onEdit={
                  index < entry.copied
                    ? undefined
                    : (text) => void sendMessage({ text, messageId: message.id })
                }
              />
            ) : (
              <AnswerBody message={message} />
            )}
            {index === lastAnswer && index === messages.length - 1 && (
              <button
                type="button"
                data-testid="regenerate"
                disabled={busy}
                onClick={() => void regenerate()}
              >
                regenerate
              </button>
            )}
          </li>
        ))}
      </ol>
      {error && (
        <div className="error" data-testid="error">
          {error.message}
        </div>
      )}
      <form
        className="composer"
        onSubmit={(event) => {
          event.preventDefault()
          if (!input.trim() || busy) return
          void sendMessage({ text: input })
          setInput('')
        }}
      >
        <input
          data-testid="input"
          value={input}
          placeholder="Message"
          onChange={(event) => setInput(event.target.value)}
        />
        <button type="submit" data-testid="send" disabled={busy}>
          send
        </button>
        <button
          type="button"
          data-testid="fork"
          disabled={busy || messages.length === 0}
          onClick={() => onFork(messages)}
        >
          fork
        </button>
      </form>
    </section>
  )
}

function App() {
  const [entries, setEntries] = useState<ChatEntry[]>(() => [
    { chat: newChat(`page-${crypto.randomUUID()}`), label: 'chat', lines: [], copied: 0 },
  ])
  const [selected, setSelected] = useState(0)
  const [forkError, setForkError] = useState<string | undefined>(undefined)
  const fork = async (from: ChatEntry, messages: UIMessage[]) => {
    setForkError(undefined)
    const newId = `${from.chat.id}-fork-${crypto.randomUUID().slice(0, 8)}`
    const response = await fetch('/api/fork', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: from.chat.id, newId, messages }),
    })
    const body = (await response.json()) as { error?: string }
    if (!response.ok) {
      setForkError(body.error ?? `fork failed (${response.status})`)
      return
    }
    const copy = forkCopy(messages)
    setEntries((current) => [
      ...current,
      { chat: newChat(newId, copy), label: `fork ${current.length}`, lines: [copy], copied: copy.length },
    ])
    setSelected(entries.length)
  }
  const entry = entries[selected]!
  return (
    <main>
      <h1>sandkeep · chat-branching</h1>
      <nav>
        {entries.map((candidate, index) => (
          <button
            type="button"
            key={candidate.chat.id}
            data-testid="tab"
            className={index === selected ? 'selected' : ''}
            onClick={() => setSelected(index)}
          >
            {candidate.label}
          </button>
        ))}
      </nav>
      {forkError && (
        <div className="error" data-testid="fork-error">
          {forkError}
        </div>
      )}
      <ChatView
        key={entry.chat.id}
        entry={entry}
        onLine={(messages) =>
          setEntries((current) => {
            const at = current.findIndex((other) => other.chat === entry.chat)
            const lines = remember(current[at]!.lines, messages)
            return lines === current[at]!.lines ? current : current.with(at, { ...current[at]!, lines })
          })
        }
        onFork={(messages) => void fork(entry, messages)}
      />
    </main>
  )
}

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <App />
  </StrictMode>,
)
