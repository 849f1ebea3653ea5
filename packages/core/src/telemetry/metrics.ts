import type { ResumeReport, TurnEndReport } from '../contract/report.js'
import type { TelemetryMeter } from './api.js'

/** Sandkeep's instruments on one meter. */
export interface SandkeepMetrics {
  /** Records one resume: ready latency, the outcome, and a state loss. */
  resumed(report: ResumeReport): void
  /** Records one turn end: its checkpoint's and its pause's durations, when it took them. */
  ended(tenant: string, end: TurnEndReport): void
  /** Adds a turn's share of running and paused time, seconds, to its tenant's counters. */
  accounted(tenant: string, runningSeconds: number, pausedSeconds: number): void
}

/**
 * Creates sandkeep's instruments. Metric names are part of the documented contract (packages/core/README.md).
 * Durations are `*.duration` histograms in seconds (unit `s`), as OpenTelemetry's semantic conventions have
 * them; `sandkeep.turn.ready` (ms) stays for dashboards built on it and is deprecated.
 */
export function createSandkeepMetrics(meter: TelemetryMeter): SandkeepMetrics {
  const readyMs = meter.createHistogram('sandkeep.turn.ready', {
    description: 'Deprecated (use sandkeep.turn.ready.duration, in s): the same latency in ms.',
    unit: 'ms',
  })
  const ready = meter.createHistogram('sandkeep.turn.ready.duration', {
    description: 'Time from beginTurn (or a lazy turn first use) to the sandbox being ready.',
    unit: 's',
  })
  const checkpoint = meter.createHistogram('sandkeep.checkpoint.duration', {
    description: "Time a turn end spent taking its checkpoint (the platform snapshot's call).",
    unit: 's',
  })
  const pause = meter.createHistogram('sandkeep.pause.duration', {
    description: 'Time the last turn end spent on its end action (pause, idle timeout, kill).',
    unit: 's',
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
      readyMs.record(report.timings.totalMs, attributes)
      ready.record(report.timings.totalMs / 1000, attributes)
      resumes.add(1, attributes)
      if (report.stateLost) stateLost.add(1, attributes)
    },
    ended(tenant, end) {
      if (end.timings.checkpointMs !== undefined)
        checkpoint.record(end.timings.checkpointMs / 1000, { 'sandkeep.tenant': tenant })
      if (end.action !== 'none' && end.action !== 'left-running-for-other-holders') {
        pause.record(end.timings.pauseMs / 1000, {
          'sandkeep.tenant': tenant,
          'sandkeep.end.action': end.action,
        })
      }
    },
    accounted(tenant, runningSeconds, pausedSeconds) {
      if (runningSeconds > 0) running.add(runningSeconds, { 'sandkeep.tenant': tenant })
      if (pausedSeconds > 0) paused.add(pausedSeconds, { 'sandkeep.tenant': tenant })
    },
  }
}
