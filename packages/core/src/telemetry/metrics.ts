import type { ResumeReport } from '../report.js'
import type { TelemetryMeter } from './api.js'

/** Sandkeep's instruments on one meter. */
export interface SandkeepMetrics {
  /** Records one resume: ready latency, the outcome, and a state loss. */
  resumed(report: ResumeReport): void
  /** Adds a turn's share of running and paused time, seconds, to its tenant's counters. */
  accounted(tenant: string, runningSeconds: number, pausedSeconds: number): void
}

/** Creates sandkeep's instruments. Metric names are part of the documented contract (packages/core/README.md). */
export function createSandkeepMetrics(meter: TelemetryMeter): SandkeepMetrics {
  const ready = meter.createHistogram('sandkeep.turn.ready', {
    description: 'Time from beginTurn (or a lazy turn first use) to the sandbox being ready.',
    unit: 'ms',
  })
  const resumes = meter.createCounter('sandkeep.resumes', {
    description: 'Turns that got their sandbox, by outcome (created, resumed, reconnected, recreated).',
  })
  const stateLost = meter.createCounter('sandkeep.state_lost', {
    description: 'Turns whose earlier sandbox state was gone (recreated, or memory/files lost on resume).',
  })
  const running = meter.createCounter('sandkeep.sandbox.running', {
    description: 'Sandbox running time, as the session store accounts it at turn end.',
    unit: 's',
  })
  const paused = meter.createCounter('sandkeep.sandbox.paused', {
    description: 'Sandbox paused time ended by a resume, as the session store accounts it at turn end.',
    unit: 's',
  })
  return {
    resumed(report) {
      const attributes = { 'sandkeep.tenant': report.tenant, 'sandkeep.outcome': report.outcome }
      ready.record(report.timings.totalMs, attributes)
      resumes.add(1, attributes)
      if (report.stateLost) stateLost.add(1, attributes)
    },
    accounted(tenant, runningSeconds, pausedSeconds) {
      if (runningSeconds > 0) running.add(runningSeconds, { 'sandkeep.tenant': tenant })
      if (pausedSeconds > 0) paused.add(pausedSeconds, { 'sandkeep.tenant': tenant })
    },
  }
}
