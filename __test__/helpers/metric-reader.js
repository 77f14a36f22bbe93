'use strict';
// An OpenTelemetry metric reader whose collect() a test calls (the SDK's own pull path).

const { MetricReader, AggregationTemporality } = require('@opentelemetry/sdk-metrics');

class CollectingReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  onForceFlush() {
    return Promise.resolve();
  }
  onShutdown() {
    return Promise.resolve();
  }
}

module.exports = { CollectingReader };
