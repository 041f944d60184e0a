import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** A monotonically increasing count. */
export interface MetricCounter<L extends string> {
  inc(labels: Readonly<Record<L, string>>, by?: number): void;
}

/** A value that goes up and down. */
export interface MetricGauge<L extends string> {
  set(labels: Readonly<Record<L, string>>, value: number): void;
  inc(labels: Readonly<Record<L, string>>, by?: number): void;
  dec(labels: Readonly<Record<L, string>>, by?: number): void;
}

/** A distribution of durations, in seconds. */
export interface MetricHistogram<L extends string> {
  observe(labels: Readonly<Record<L, string>>, seconds: number): void;
}

/** What a metric is: its name without the `toolplane_` prefix, its help text and its label names. */
export interface MetricSpec<L extends string> {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly L[];
}

/** The metrics a service declares on its registry, with the project's prefix and bounded cardinality. */
export interface ServiceMetrics {
  counter<L extends string>(spec: MetricSpec<L>): MetricCounter<L>;
  /**
   * A gauge; with `collect`, its samples are rebuilt at every scrape (the previous scrape's are dropped first, so a
   * series that is no longer reported disappears). `collect` must not throw: a rejection fails the whole scrape.
   */
  gauge<L extends string>(
    spec: MetricSpec<L> & { readonly collect?: (set: (labels: Readonly<Record<L, string>>, value: number) => void) => void | Promise<void> },
  ): MetricGauge<L>;
  histogram<L extends string>(spec: MetricSpec<L> & { readonly buckets?: readonly number[] }): MetricHistogram<L>;
}

/** The prefix of every metric a service exposes (the default process metrics have it too). */
export const metricPrefix = 'toolplane_';

/** Buckets (seconds) for latency histograms: sub-millisecond pipeline stages up to half-minute tool calls. */
export const latencyBuckets: readonly number[] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** The label value every label takes once a metric has `maxSeries` distinct label sets. */
export const overflowLabel = 'other';

const defaultMaxSeries = 500;

/**
 * Names get the `toolplane_` prefix (a spec's name is given without it). Bounded cardinality: past `maxSeries` (default
 * 500) distinct label sets per metric, new sets are counted under every label = "other". Ids never go in labels.
 *
 * Recording never throws and never awaits, so it is safe on a hot path: a value that is not a finite number (or a
 * negative counter increment) is dropped rather than thrown, because losing one sample is better than failing the
 * work being measured.
 */
export function serviceMetrics(registry: Registry, options?: { readonly maxSeries?: number }): ServiceMetrics {
  const maxSeries = options?.maxSeries ?? defaultMaxSeries;
  return {
    counter: (spec) => {
      const metric = new Counter<string>({ name: metricPrefix + spec.name, help: spec.help, labelNames: spec.labelNames, registers: [registry] });
      const fold = labelFolder(spec.labelNames, maxSeries);
      return {
        inc: (labels, by = 1) => {
          if (Number.isFinite(by) && by >= 0) metric.inc(fold.labels(labels), by);
        },
      };
    },
    gauge: (spec) => {
      const fold = labelFolder(spec.labelNames, maxSeries);
      const set = (labels: Readonly<Record<string, string>>, value: number) => {
        if (Number.isFinite(value)) metric.set(fold.labels(labels), value);
      };
      const collect = spec.collect;
      const metric: Gauge<string> = new Gauge<string>({
        name: metricPrefix + spec.name,
        help: spec.help,
        labelNames: spec.labelNames,
        registers: [registry],
        ...(collect === undefined
          ? {}
          : {
              collect: () => {
                metric.reset();
                fold.clear();
                return collect(set);
              },
            }),
      });
      return {
        set,
        inc: (labels, by = 1) => {
          if (Number.isFinite(by)) metric.inc(fold.labels(labels), by);
        },
        dec: (labels, by = 1) => {
          if (Number.isFinite(by)) metric.dec(fold.labels(labels), by);
        },
      };
    },
    histogram: (spec) => {
      const metric = new Histogram<string>({
        name: metricPrefix + spec.name,
        help: spec.help,
        labelNames: spec.labelNames,
        buckets: [...(spec.buckets ?? latencyBuckets)],
        registers: [registry],
      });
      const fold = labelFolder(spec.labelNames, maxSeries);
      return {
        observe: (labels, seconds) => {
          if (Number.isFinite(seconds)) metric.observe(fold.labels(labels), seconds);
        },
      };
    },
  };
}

/** Keeps the label sets a metric has seen and maps every new one past the bound onto the overflow set. */
function labelFolder(labelNames: readonly string[], maxSeries: number) {
  const seen = new Set<string>();
  const overflow = Object.fromEntries(labelNames.map((name) => [name, overflowLabel]));
  return {
    labels: (labels: Readonly<Record<string, string>>): Record<string, string> => {
      if (labelNames.length === 0) return {};
      // NUL cannot be typed into a label value by accident, so joined values identify a set.
      const key = labelNames.map((name) => labels[name]).join('\u0000');
      if (seen.has(key)) return labels;
      if (seen.size >= maxSeries) return overflow;
      seen.add(key);
      return labels;
    },
    clear: () => seen.clear(),
  };
}
