// What the scripted model answers to each message of the scenario. Every answer that changes something
// first looks at the sandbox (the variables the chat may have set, and the .txt files), so the printed
// output shows what state each answer started from. The calls that set state are marked `setup`: they are
// recorded in the journal, which rebuilds the interpreter's variables on a sandbox made from a snapshot
// (local-e2b's snapshots keep files, not memory).
import type { ScriptedAnswer, ScriptedCall } from './model.ts'

/** The variables the scenario sets. */
const NAMES = ['prices', 'discount', 'shipping', 'tax', 'currency', 'x']

/** Looks at the sandbox: which of the variables are set (a dict), and which .txt files exist. */
export const inspect: ScriptedCall[] = [
  {
    toolName: 'runCode',
    input: { code: `{name: globals()[name] for name in ${JSON.stringify(NAMES)} if name in globals()}` },
  },
  { toolName: 'runCommand', input: { command: 'ls *.txt 2>/dev/null | tr "\\n" " "; true' } },
]

/** Sets `name = value` and writes `name.txt`, both as setup steps. */
function set(name: string, value: string): ScriptedCall[] {
  return [
    { toolName: 'runCode', input: { code: `${name} = ${value}`, setup: true } },
    { toolName: 'writeFile', input: { path: `${name}.txt`, content: `${value}\n`, setup: true } },
  ]
}

export const script: Record<string, ScriptedAnswer | ScriptedAnswer[]> = {
  'Load the prices.': { steps: [set('prices', '[12, 7, 30]')], text: 'Loaded three prices.' },
  'Apply a 10% discount.': { steps: [inspect, set('discount', '0.10')], text: 'Applied a 10% discount.' },
  'Apply a 20% discount.': { steps: [inspect, set('discount', '0.20')], text: 'Applied a 20% discount.' },
  'Add 5 for shipping.': { steps: [inspect, set('shipping', '5')], text: 'Added 5 for shipping.' },
  'Add 20% tax.': { steps: [inspect, set('tax', '0.20')], text: 'Added 20% tax.' },
  'Switch to euros.': { steps: [inspect, set('currency', "'EUR'")], text: 'Prices are in euros now.' },
  'What is set?': { steps: [inspect], text: 'That is what this chat has set.' },
  // The page's run (test/page.test.ts): a regenerate of "Set x to 2." plays the second answer, x = 20.
  'Set x to 1.': { steps: [inspect, set('x', '1')], text: 'x is 1.' },
  'Set x to 2.': [
    { steps: [inspect, set('x', '2')], text: 'x is 2.' },
    { steps: [inspect, set('x', '20')], text: 'x is 20.' },
  ],
  'Set x to 3.': { steps: [inspect, set('x', '3')], text: 'x is 3.' },
}
