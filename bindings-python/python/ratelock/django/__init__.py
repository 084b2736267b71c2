"""``ratelock.django``: rate limits for Django on the adapter core (``ratelock.http``): a middleware for
default limits, a ``@ratelimit`` decorator for function and class-based views (sync and async), and
system checks that report a bad rule or URL when the project starts. Configured by one settings dict:

    INSTALLED_APPS = [..., "ratelock.django"]          # the system checks
    MIDDLEWARE = [..., "ratelock.django.RateLimitMiddleware"]
    RATELOCK = {
        "URL": "redis://localhost:6379/0",
        "DEFAULT_LIMITS": "100/minute",
        "KEY_FUNC": "myapp.keys.api_key",               # a function of the request, or its dotted path
        "ON_ERROR": "raise",                            # an outage answers 503
        "STANDARD_HEADERS": "draft-11",
    }

    from ratelock.django import ratelimit

    @ratelimit("5/minute", key=lambda request: request.POST.get("username"))
    def login(request): ...
"""

from ratelock.django.decorators import ratelimit, ratelimit_exempt
from ratelock.django.middleware import RateLimitMiddleware

__all__ = ["RateLimitMiddleware", "ratelimit", "ratelimit_exempt"]
