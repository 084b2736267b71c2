"""The Django app ``ratelock.django``: installing it registers the system checks (``checks.py``)."""

from django.apps import AppConfig


class RatelockConfig(AppConfig):
    name = "ratelock.django"
    label = "ratelock"
    verbose_name = "ratelock"

    def ready(self) -> None:
        from ratelock.django import checks  # noqa: F401  (registers the checks)
