// The code-interpreter template's libraries through the unmodified @e2b/code-interpreter SDK: numpy, pandas,
// matplotlib and PIL are there, matplotlib figures become a png and E2B's `chart`, DataFrames E2B's `data`.
import { Sandbox } from '@e2b/code-interpreter'
import { describe, expect, it } from 'vitest'
import { useTestHost } from './helpers.js'

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])

/** Width and height of a base64 PNG (from its IHDR chunk). */
function pngSize(base64: string): { width: number; height: number } {
  const bytes = Buffer.from(base64, 'base64')
  expect(bytes.subarray(0, 8)).toEqual(PNG_SIGNATURE)
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) }
}

const lines = (...code: string[]) => code.join('\n')

describe('code interpreter libraries', () => {
  const t = useTestHost()
  let shared: Sandbox | undefined
  /** One sandbox for the read-only checks (the font cache is built once). */
  const sandbox = async () => {
    shared ??= await Sandbox.create({ ...t.opts })
    return shared
  }

  it('numpy, pandas, matplotlib and PIL import in the kernel and in commands (the sandbox python3)', async () => {
    const box = await sandbox()
    const versions = await box.runCode(
      'import numpy, pandas, matplotlib, PIL; [m.__version__ for m in (numpy, pandas, matplotlib, PIL)]',
    )
    expect(versions.error).toBeUndefined()
    expect(versions.text).toMatch(/^\['\d+\.\d+/)
    const command = await box.commands.run(
      'python3 -c "import matplotlib.pyplot as plt; plt.plot([1, 2]); plt.savefig(\'/tmp/p.png\'); print(plt.get_backend())"',
    )
    expect(command).toMatchObject({ exitCode: 0, stdout: 'agg\n', stderr: '' })
  })

  it('plt.show() gives a png and a line chart with units, ticks, scales and the points', async () => {
    const box = await sandbox()
    const execution = await box.runCode(
      lines(
        'import datetime',
        'import matplotlib.pyplot as plt',
        'days = [datetime.date(2024, 3, d) for d in range(1, 6)]',
        'plt.figure(figsize=(4, 3))',
        "plt.plot(days, [3, 1, 4, 1, 5], label='rain')",
        'plt.plot(days, [2, 7, 1, 8, 2])',
        "plt.xlabel('Day [date]'); plt.ylabel('Rain (mm)'); plt.title('March')",
        'plt.show()',
      ),
    )
    expect(execution.error).toBeUndefined()
    expect(execution.results).toHaveLength(1)
    const [figure] = execution.results
    expect(figure?.isMainResult).toBe(false)
    expect(figure?.text).toMatch(/^<Figure size 400x300 with 1 Axes>$/)
    expect(pngSize(figure?.png ?? '').width).toBeGreaterThan(100)
    const chart = figure?.chart as unknown as Record<string, unknown>
    expect(chart).toMatchObject({
      type: 'line',
      title: 'March',
      x_label: 'Day [date]',
      y_label: 'Rain (mm)',
      x_unit: 'date',
      y_unit: 'mm',
      x_scale: 'datetime',
      y_scale: 'linear',
      elements: [
        {
          label: 'rain',
          points: [
            ['2024-03-01', 3],
            ['2024-03-02', 1],
            ['2024-03-03', 4],
            ['2024-03-04', 1],
            ['2024-03-05', 5],
          ],
        },
        { label: 'Line 1', points: expect.arrayContaining([['2024-03-04', 8]]) },
      ],
    })
    expect((chart.x_ticks as unknown[]).every((tick) => typeof tick === 'string')).toBe(true)
    expect((chart.y_ticks as unknown[]).every((tick) => typeof tick === 'number')).toBe(true)
    expect((chart.y_tick_labels as string[]).length).toBe((chart.y_ticks as unknown[]).length)
    expect((chart.y_tick_labels as string[]).some((label) => label !== '')).toBe(true)
  })

  it('bars (grouped and horizontal), scatter, pie and box-and-whisker charts', async () => {
    const box = await sandbox()
    const run = async (...code: string[]) => {
      const execution = await box.runCode(lines('import matplotlib.pyplot as plt', ...code, 'plt.show()'))
      expect(execution.error).toBeUndefined()
      return execution.results[0]?.chart as unknown as Record<string, unknown>
    }
    expect(
      await run(
        "plt.bar(['x', 'y'], [5, 7], label='2023')",
        "plt.bar(['x', 'y'], [2, 3], bottom=[5, 7], label='2024')",
        "plt.ylabel('Count (n)')",
      ),
    ).toMatchObject({
      type: 'bar',
      y_unit: 'n',
      elements: [
        { label: 'x', group: '2023', value: 5 },
        { label: 'y', group: '2023', value: 7 },
        { label: 'x', group: '2024', value: 2 },
        { label: 'y', group: '2024', value: 3 },
      ],
    })
    // A horizontal bar chart's categories are on y: the chart's x axis is the category axis.
    expect(
      await run("plt.barh(['a', 'b', 'c'], [1, 2, 3])", "plt.xlabel('Size (cm)')", "plt.ylabel('Item')"),
    ).toMatchObject({
      type: 'bar',
      x_label: 'Item',
      y_label: 'Size (cm)',
      y_unit: 'cm',
      elements: [
        { label: 'a', value: 1 },
        { label: 'b', value: 2 },
        { label: 'c', value: 3 },
      ],
    })
    expect(await run("plt.scatter([1, 2, 3], [4, 5, 6], label='s')", 'plt.axhline(5)')).toMatchObject({
      type: 'scatter',
      elements: [
        {
          label: 's',
          points: [
            [1, 4],
            [2, 5],
            [3, 6],
          ],
        },
      ],
    })
    expect(await run("plt.pie([3, 1], labels=['three', 'one'])", "plt.title('Shares')")).toEqual({
      type: 'pie',
      title: 'Shares',
      elements: [
        { label: 'three', angle: 270, radius: 1 },
        { label: 'one', angle: 90, radius: 1 },
      ],
    })
    expect(
      await run(
        'fig, ax = plt.subplots()',
        "ax.boxplot([[1, 2, 3, 4, 5], [2, 4, 6, 8, 10, 40]], labels=['small', 'wide'], patch_artist=True)",
      ),
    ).toMatchObject({
      type: 'box_and_whisker',
      elements: [
        { label: 'small', min: 1, first_quartile: 2, median: 3, third_quartile: 4, max: 5, outliers: [] },
        {
          label: 'wide',
          min: 2,
          first_quartile: 4.5,
          median: 7,
          third_quartile: 9.5,
          max: 10,
          outliers: [40],
        },
      ],
    })
  })

  it('several axes make a superchart; an axes without a known plot is unknown; a blank figure has no chart', async () => {
    const box = await sandbox()
    const execution = await box.runCode(
      lines(
        'import matplotlib.pyplot as plt',
        'fig, (left, right) = plt.subplots(1, 2)',
        "fig.suptitle('Both')",
        "left.plot([1, 2], [3, 4]); left.set_title('L')",
        "right.add_artist(plt.Circle((0, 0), 1)); right.set_title('R')",
        'plt.show()',
        'plt.figure()',
        'plt.show()',
      ),
    )
    expect(execution.results).toHaveLength(2)
    expect(execution.results[0]?.chart).toMatchObject({
      type: 'superchart',
      title: 'Both',
      elements: [
        {
          type: 'line',
          title: 'L',
          elements: [
            {
              points: [
                [1, 3],
                [2, 4],
              ],
            },
          ],
        },
        { type: 'unknown', title: 'R', elements: [] },
      ],
    })
    expect(execution.results[1]?.png).toBeDefined()
    expect(execution.results[1]?.chart).toBeUndefined()
  })

  it('a figure left open is shown after its cell and closed; a figure as the value is the main result', async () => {
    const box = await sandbox()
    const left = await box.runCode(lines('import matplotlib.pyplot as plt', 'plt.plot([1, 2, 3])', 'None'))
    expect(left.results.map((result) => [result.isMainResult, result.chart?.type])).toEqual([[false, 'line']])
    expect((await box.runCode('plt.get_fignums()')).text).toBe('[]')
    const value = await box.runCode(lines('fig, ax = plt.subplots()', "ax.bar(['q'], [1])", 'fig'))
    expect(value.results.map((result) => [result.isMainResult, result.chart?.type])).toEqual([[true, 'bar']])
    expect(value.results[0]?.png).toBeDefined()
  })

  it('a DataFrame gives E2B data (columns as lists, NaN as null, times as ISO text) beside its html', async () => {
    const box = await sandbox()
    const execution = await box.runCode(
      lines(
        'import pandas as pd, numpy as np',
        "pd.DataFrame({'n': [1, 2], 'x': [0.5, np.nan], 'when': pd.to_datetime(['2024-01-02', '2024-01-03'])})",
      ),
    )
    const [frame] = execution.results
    expect(frame?.isMainResult).toBe(true)
    expect(frame?.data).toEqual({
      n: [1, 2],
      x: [0.5, null],
      when: ['2024-01-02T00:00:00', '2024-01-03T00:00:00'],
    })
    expect(frame?.html).toContain('<table')
    expect(frame?.text).toContain('when')
  })

  it('PIL images: the value, Image.show() and Image.save() to a file give png results', async () => {
    const box = await sandbox()
    const execution = await box.runCode(
      lines(
        'from PIL import Image',
        "image = Image.new('RGB', (12, 7), 'red')",
        'image.show()',
        "image.save('/tmp/red.png')",
        'image',
      ),
    )
    expect(execution.error).toBeUndefined()
    expect(execution.results.map((result) => result.isMainResult)).toEqual([false, false, true])
    for (const result of execution.results)
      expect(pngSize(result.png ?? '')).toEqual({ width: 12, height: 7 })
    expect(
      (await box.commands.run('python3 -c "from PIL import Image; print(Image.open(\'/tmp/red.png\').size)"'))
        .stdout,
    ).toBe('(12, 7)\n')
  })

  it('a cell indented as a whole runs (its common indentation is dropped)', async () => {
    const box = await sandbox()
    const execution = await box.runCode('\n    x = 6\n    y = 7\n    x * y\n    ')
    expect(execution.error).toBeUndefined()
    expect(execution.text).toBe('42')
    await box.kill()
    shared = undefined
  })
})
