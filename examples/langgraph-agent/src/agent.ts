// The agent: a StateGraph (agent node → LangGraph's ToolNode → agent) with sandkeep's tools, compiled with
// sandkeep's checkpoint saver. The chat model is scripted so the example runs without an API key: the last
// user message is a JSON list of rounds, each the tool calls of one reply; after the last round it answers.
// Swap in any tool-calling chat model (`new ChatOpenAI(...).bindTools(tools)`) for a real one.
import { BaseChatModel } from '@langchain/core/language_models/chat_models'
import { AIMessage, type BaseMessage, HumanMessage } from '@langchain/core/messages'
import type { ChatResult } from '@langchain/core/outputs'
import { END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph'
import { ToolNode } from '@langchain/langgraph/prebuilt'
import { type SandkeepCheckpointSaver, sandkeepTools } from '@sandkeep/langgraph'

/** One tool call of a scripted reply: the tool's name and its arguments. */
export type ScriptedCall = [name: string, args: Record<string, unknown>]

let callCount = 0

class ScriptedChatModel extends BaseChatModel {
  _llmType(): string {
    return 'scripted'
  }

  async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    const lastUser = messages.findLastIndex((message) => message.type === 'human')
    const rounds = JSON.parse(String(messages[lastUser]?.content)) as ScriptedCall[][]
    const replies = messages.slice(lastUser + 1).filter((message) => message.type === 'ai').length
    const round = rounds[replies]
    const message = round
      ? new AIMessage({
          content: '',
          tool_calls: round.map(([name, args]) => ({
            id: `call_${++callCount}`,
            name,
            args,
            type: 'tool_call',
          })),
        })
      : new AIMessage('done')
    return { generations: [{ message, text: String(message.content) }] }
  }
}

/** A user message that scripts the model's tool calls, round by round. */
export function userMessage(rounds: ScriptedCall[][]): HumanMessage {
  return new HumanMessage(JSON.stringify(rounds))
}

/** The compiled agent graph. */
export function buildAgent(saver: SandkeepCheckpointSaver) {
  const model = new ScriptedChatModel({})
  return new StateGraph(MessagesAnnotation)
    .addNode('agent', async (state) => ({ messages: [await model.invoke(state.messages)] }))
    .addNode('tools', new ToolNode(sandkeepTools(saver)))
    .addEdge(START, 'agent')
    .addConditionalEdges(
      'agent',
      (state) => ((state.messages.at(-1) as AIMessage | undefined)?.tool_calls?.length ? 'tools' : END),
      ['tools', END],
    )
    .addEdge('tools', 'agent')
    .compile({ checkpointer: saver })
}
