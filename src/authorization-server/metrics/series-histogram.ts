import type { Metric, MetricObjectWithValues, MetricValueWithName, Registry } from 'prom-client';

/** One label set's counts: an observation is a comparison per bucket and three additions. */
export class HistogramSeries {
  /** Observations per bucket (not cumulative); past the last bound, only `count`. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(
    readonly labels: Readonly<Record<string, string>>,
    private readonly bounds: readonly number[],
  ) {
    this.counts = new Float64Array(bounds.length);
  }

  observe(value: number): void {
    this.sum += value;
    this.count++;
    const bounds = this.bounds;
    for (let i = 0; i < bounds.length; i++) {
      if (value <= bounds[i]!) {
        this.counts[i]!++;
        return;
      }
    }
  }
}

/**
 * A Prometheus histogram for the hot paths (every store call, every token request). prom-client's
 * Histogram builds a key string and checks the labels on every observation; here a caller finds
 * its label set's series once (`series()`) and keeps it, so an observation costs a few additions.
 * It joins the same registry and reads the same in the text format.
 */
export class SeriesHistogram<Label extends string> {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly all = new Map<string, HistogramSeries>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelNames: readonly Label[],
    private readonly bounds: readonly number[],
    registry: Registry,
  ) {
    registry.registerMetric(this as unknown as Metric);
  }

  /** The series of these label values, made on first use; keep it to observe into. */
  series(labels: Record<Label, string>): HistogramSeries {
    const key = this.labelNames.map((name) => labels[name]).join('\n');
    let series = this.all.get(key);
    if (!series) this.all.set(key, (series = new HistogramSeries({ ...labels }, this.bounds)));
    return series;
  }

  get(): MetricObjectWithValues<MetricValueWithName<string>> {
    const values: MetricValueWithName<string>[] = [];
    for (const series of this.all.values()) {
      if (series.count === 0) continue; // as prom-client's, a label set appears once observed
      let cumulative = 0;
      this.bounds.forEach((bound, i) => {
        cumulative += series.counts[i]!;
        values.push(bucket(`${this.name}_bucket`, { le: bound, ...series.labels }, cumulative));
      });
      values.push(bucket(`${this.name}_bucket`, { le: '+Inf', ...series.labels }, series.count));
      values.push({ metricName: `${this.name}_sum`, labels: { ...series.labels }, value: series.sum });
      values.push({ metricName: `${this.name}_count`, labels: { ...series.labels }, value: series.count });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values } as unknown as MetricObjectWithValues<
      MetricValueWithName<string>
    >;
  }

  /** Zeroes every series (Registry.resetMetrics); the series callers keep stay valid. */
  reset(): void {
    for (const series of this.all.values()) {
      series.counts.fill(0);
      series.sum = 0;
      series.count = 0;
    }
  }
}

/** A bucket's value, shaped as prom-client's (which says it has no exemplar). */
function bucket(metricName: string, labels: Record<string, string | number>, value: number): MetricValueWithName<string> {
  return { value, metricName, exemplar: null, labels } as MetricValueWithName<string>;
}
