// A runCode result as the AI SDK gives it to the model: JSON as usual, but with images, the JSON as text and
// the images as file parts after it (the split is @sandkeep/agent's codeResultContent).
import {
  type CodeToolResult,
  codeResultContent,
  type ToolErrorResult,
  type ToolProgressResult,
} from '@sandkeep/agent'
import type { ToolResultPart } from 'ai'

/** What a tool's `toModelOutput` returns (the `ai` package does not export the name). */
type ToolResultOutput = ToolResultPart['output']

/**
 * The model's view of a `runCode` result: JSON as usual, but when the cell produced images, the JSON as text
 * (each image replaced by a pointer) followed by the images as image parts, which vision models can see.
 */
export function codeModelOutput(
  output: CodeToolResult | ToolErrorResult | ToolProgressResult,
): ToolResultOutput {
  const content = codeResultContent(output)
  if (content === undefined) return { type: 'json', value: output as never }
  const parts = content.images.map((image) => ({
    type: 'file' as const,
    mediaType: image.mediaType,
    data: { type: 'data' as const, data: image.base64 },
  }))
  return { type: 'content', value: [{ type: 'text', text: content.text }, ...parts] }
}
