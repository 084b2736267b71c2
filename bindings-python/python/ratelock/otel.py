"""OpenTelemetry metrics for ratelock through ``opentelemetry-api``: pass ``metrics=Metrics()`` to a
limiter or a lock (sync or asyncio) and every decision, round trip, store error, lock wait, hold and
loss is recorded, with the same instrument names and attributes as in Rust and Node. The
measurements come from the Rust core's decision hook; this module only hands them to the
instruments. ``opentelemetry-api`` is imported only when a ``Metrics`` is made; with no meter
provider set, the API's instruments record nothing.

Examples:
    >>> from ratelock import Limiter
    >>> from ratelock.otel import Metrics
    >>> limiter = Limiter(metrics=Metrics())
    >>> limiter.hit("user:1", "10/minute").allowed
    True
"""

from typing import Any, Callable, Dict, Mapping, Optional, Tuple, Union

from ratelock import _native

MetricsRecorder = Callable[[str, Union[int, float], Dict[str, str]], None]
"""What ``metrics=`` takes: called with an instrument's name, a value (an int for a counter, seconds for
a histogram) and the attributes, for every measurement. ``Metrics`` is one."""


class Metrics:
    """The ratelock instruments of one meter, callable as a limiter's or a lock's ``metrics=``.

    ``meter_provider`` defaults to the global one (``opentelemetry.metrics.set_meter_provider``);
    the meter is named ``ratelock``. Keys are never attributes; rules are.
    """

    def __init__(self, meter_provider: Optional[Any] = None) -> None:
        try:
            from opentelemetry import metrics
        except ImportError as missing:
            raise ImportError(
                "ratelock.otel.Metrics records through opentelemetry-api: pip install opentelemetry-api"
            ) from missing
        meter = metrics.get_meter("ratelock", _native.__version__, meter_provider=meter_provider)
        self._record: Dict[str, Callable[[Union[int, float], Mapping[str, str]], None]] = {}
        for name, kind, unit, description, boundaries in _native.instruments():
            if kind == "histogram":
                self._record[name] = _histogram(meter, name, unit, description, boundaries).record
            else:
                self._record[name] = meter.create_counter(name, unit=unit, description=description).add

    def __call__(self, name: str, value: Union[int, float], attributes: Dict[str, str]) -> None:
        """Records one measurement (called by the core's hook, on the thread that made it)."""
        self._record[name](value, attributes)


def _histogram(meter: Any, name: str, unit: str, description: str, boundaries: Tuple[float, ...]) -> Any:
    """A histogram in seconds with ratelock's bucket boundaries as the API's advice (opentelemetry-api
    1.23 and later): the SDK's default boundaries were made for milliseconds, and put every round trip
    in one bucket. An older API takes no advice; a view can set the boundaries there."""
    try:
        return meter.create_histogram(
            name, unit=unit, description=description, explicit_bucket_boundaries_advisory=list(boundaries)
        )
    except TypeError:
        return meter.create_histogram(name, unit=unit, description=description)
