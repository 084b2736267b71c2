"""Django system checks for ratelock: the ``RATELOCK`` dict's keys, its URL and every rule text, reported
when the project starts (``manage.py check``, ``runserver``, ``migrate``), with no I/O."""

from typing import Any, List

from django.core import checks

from ratelock._native import Client, RatelockError, parse_rules
from ratelock.django import conf


@checks.register("ratelock")
def check_settings(app_configs: Any = None, **kwargs: Any) -> List[checks.CheckMessage]:
    try:
        config = conf.configured()
    except ValueError as error:
        return [checks.Error(str(error), id="ratelock.E001")]
    problems: List[checks.CheckMessage] = []
    if config["URL"] is not None:
        try:
            Client(config["URL"], timeout=float(config["TIMEOUT"]))
        except (RatelockError, TypeError, ValueError) as error:
            problems.append(checks.Error(f"RATELOCK['URL'] is not usable: {error}", id="ratelock.E002"))
    for name in ("DEFAULT_LIMITS", "APPLICATION_LIMITS"):
        rules = config[name]
        if rules is not None and not callable(rules):
            try:
                parse_rules(rules)
            except (RatelockError, TypeError) as error:
                problems.append(checks.Error(f"RATELOCK[{name!r}] is not valid: {error}", id="ratelock.E003"))
    try:
        conf.build(asynchronous=False)
    except (RatelockError, ValueError, ImportError, TypeError) as error:
        problems.append(checks.Error(f"RATELOCK is not valid: {error}", id="ratelock.E004"))
    return problems
