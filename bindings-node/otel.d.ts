// Types of `ratelock/otel` (otel.js): OpenTelemetry metrics through @opentelemetry/api. The provider
// is typed by the part Metrics uses, so these types need no OpenTelemetry package of their own.

type Attributes = Record<string, string>

/** The part of an OpenTelemetry `MeterProvider` that `Metrics` uses (the API's and the SDK's fit). */
export interface MeterProviderLike {
  getMeter(
    name: string,
    version?: string,
  ): {
    createCounter(name: string, options?: { description?: string }): { add(value: number, attributes?: Attributes): void }
    createHistogram(
      name: string,
      options?: { description?: string; unit?: string },
    ): { record(value: number, attributes?: Attributes): void }
  }
}

/** ratelock's instruments on one meter, for a limiter's or a lock's `metrics` option. Names and
 * attributes are the same in every language (see the operations guide); keys are never attributes. */
export declare class Metrics {
  /** `meterProvider` defaults to the global one as set when this is made (make it after the SDK starts). */
  constructor(options?: { meterProvider?: MeterProviderLike })
  /** Records one measurement: the addon calls it on the JavaScript thread. */
  record(name: string, value: number, attributes: Attributes): void
}
