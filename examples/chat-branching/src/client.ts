// The scripted client's chat: the AI SDK's own AbstractChat (what useChat wraps in React) over its
// DefaultChatTransport, with the messages kept in a plain array, so regenerate() and an edit
// (sendMessage with the edited message's id) send exactly what a browser's useChat would.
import { AbstractChat, type ChatState, type ChatStatus, DefaultChatTransport, type UIMessage } from 'ai'

class ArrayChatState implements ChatState<UIMessage> {
  status: ChatStatus = 'ready'
  error: Error | undefined = undefined
  messages: UIMessage[]
  constructor(messages: UIMessage[]) {
    this.messages = messages
  }
  pushMessage = (message: UIMessage) => {
    this.messages = [...this.messages, message]
  }
  popMessage = () => {
    this.messages = this.messages.slice(0, -1)
  }
  replaceMessage = (index: number, message: UIMessage) => {
    this.messages = this.messages.with(index, message)
  }
  snapshot = <T>(thing: T): T => structuredClone(thing)
}

/** A chat of conversation `id` against the example server at `url`, starting with `messages`. */
export class NodeChat extends AbstractChat<UIMessage> {
  constructor(url: string, id: string, messages: UIMessage[] = []) {
    super({
      id,
      state: new ArrayChatState(messages),
      transport: new DefaultChatTransport({ api: `${url}/api/chat` }),
    })
  }
}
