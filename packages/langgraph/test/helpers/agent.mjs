// A real LangGraph agent (StateGraph: agent node → ToolNode → agent) on a scripted chat model, shared by the
// integration tests and the second-process script. No API key: the model reads its script from the last
// human message, a JSON array of rounds, each round the tool calls of one model reply; after the last round
// it answers "done". `ask_human` interrupts the run (human in the loop) and returns the resume value.
import { BaseChatModel } from '@langchain/core/language_models/chat_models'
import { AIMessage, HumanMessage } from '@langchain/core/messages'
import { tool } from '@langchain/core/tools'
import { END, interrupt, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph'
import { ToolNode } from '@langchain/langgraph/prebuilt'
import { sandkeepTools } from '@sandkeep/langgraph'
import { z } from 'zod'

let calls = 0

/** A chat model that replays the rounds of tool calls written in the last human message. */
export class ScriptedChatModel extends BaseChatModel {
  _llmType() {
    return 'scripted'
  }

  bindTools() {
    return this
  }

  async _generate(messages) {
    const lastHuman = messages.findLastIndex((message) => message.type === 'human')
    const rounds = JSON.parse(String(messages[lastHuman].content))
    const replies = messages.slice(lastHuman + 1).filter((message) => message.type === 'ai').length
    const round = rounds[replies]
    const message = round
      ? new AIMessage({
          content: '',
          tool_calls: round.map(([name, args]) => ({ id: `call_${++calls}`, name, args, type: 'tool_call' })),
        })
      : new AIMessage('done')
    return { generations: [{ message, text: typeof message.content === 'string' ? message.content : '' }] }
  }
}

/** A human message that scripts the model: `rounds` = [[[toolName, args], …], …]. */
export function script(rounds) {
  return new HumanMessage(JSON.stringify(rounds))
}

const askHuman = tool(({ question }) => interrupt(question), {
  name: 'ask_human',
  description: 'Asks the user and waits for the answer.',
  schema: z.object({ question: z.string() }),
})

/** The agent graph's builder (agent node → ToolNode → agent) with the sandkeep tools and `ask_human`. */
function agentBuilder(saver) {
  const model = new ScriptedChatModel({})
  const tools = [...sandkeepTools(saver), askHuman]
  return new StateGraph(MessagesAnnotation)
    .addNode('agent', async (state) => ({ messages: [await model.invoke(state.messages)] }))
    .addNode('tools', new ToolNode(tools))
    .addEdge(START, 'agent')
    .addConditionalEdges('agent', (state) => (state.messages.at(-1)?.tool_calls?.length ? 'tools' : END), [
      'tools',
      END,
    ])
    .addEdge('tools', 'agent')
}

/** The agent graph over the saver (the sandkeep wrapper). */
export function buildAgent(saver) {
  return agentBuilder(saver).compile({ checkpointer: saver })
}

/** A root graph whose only node is the agent as a subgraph (its checkpoints in a nested namespace). */
export function buildNestedAgent(saver) {
  return new StateGraph(MessagesAnnotation)
    .addNode('assistant', agentBuilder(saver).compile())
    .addEdge(START, 'assistant')
    .addEdge('assistant', END)
    .compile({ checkpointer: saver })
}

/** The text of the tool results of the run's last `count` tool calls, in call order. */
export function lastToolResults(state, count) {
  return state.messages
    .filter((message) => message.type === 'tool')
    .slice(-count)
    .map((message) => String(message.content))
}
