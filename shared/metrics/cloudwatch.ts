import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { CountedEvent, OperationObserver } from './observer.js';

const EVENT_METRICS: Record<CountedEvent, string> = {
  'router reconcile': 'RouterReconciles',
  'hub write': 'HubWrites',
};

/**
 * Publishes each operation as CloudWatch metrics (embedded metric format, one log line per operation)
 * under dimension `operation`: the same figures `npm run bench` reports per operation. Single calls and
 * steps are not published; the operation's totals carry them.
 */
export function cloudWatchObserver(namespace: string): OperationObserver {
  const metrics = new Metrics({ namespace, serviceName: 'fogbridge' });
  return {
    operation(kind, figures) {
      metrics.addDimension('operation', kind);
      metrics.addMetric('Calls', MetricUnit.Count, figures.calls);
      metrics.addMetric('SequentialCalls', MetricUnit.Count, figures.sequentialCalls);
      metrics.addMetric('ReadUnits', MetricUnit.Count, figures.readUnits);
      metrics.addMetric('WriteUnits', MetricUnit.Count, figures.writeUnits);
      metrics.addMetric('MessagesSent', MetricUnit.Count, figures.messages);
      metrics.addMetric('Duration', MetricUnit.Milliseconds, figures.durationMs);
      for (const [event, count] of Object.entries(figures.events)) {
        metrics.addMetric(EVENT_METRICS[event as CountedEvent], MetricUnit.Count, count);
      }
      // Published at once, in the same turn it was filled: operations that run side by side never share
      // a line.
      metrics.publishStoredMetrics();
    },
    call() {},
    step() {},
  };
}
