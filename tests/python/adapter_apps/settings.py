"""What every adapter app reads from its environment: the store, the failure policy, trusted proxies,
the key prefix and the answer style, the same for every framework."""

import os
from typing import Any, Dict, List, Optional, Union

#: Each route's rules. `/search` is the route the agreement test drives in every framework.
SEARCH_RULES = "3/hour"
#: `/ban`: a rule that bans the client for ten minutes once it denies.
BAN_RULES = "2/hour block 10 minutes"
#: `/shadow`: a rule in shadow, which lets every request through and still says what it would do.
SHADOW_RULES = "2/hour shadow"
PLANS = {"free": "2/hour", "pro": "5/hour"}


def trusted_proxies() -> Union[int, List[str], None]:
    given = os.environ.get("RATELOCK_TRUSTED_PROXIES")
    if not given:
        return None
    return int(given) if given.isdigit() else given.split(",")


def options() -> Dict[str, Any]:
    """The keyword arguments every adapter takes, from the environment."""
    return {
        "url": os.environ.get("RATELOCK_URL") or None,
        "prefix": os.environ.get("RATELOCK_PREFIX", "apps"),
        "on_error": os.environ.get("RATELOCK_ON_ERROR", "raise"),
        "timeout": float(os.environ.get("RATELOCK_TIMEOUT", "0.5")),
        "trusted_proxies": trusted_proxies(),
        "denied_body": os.environ.get("RATELOCK_DENIED_BODY", "text"),
        "legacy_headers": os.environ.get("RATELOCK_LEGACY_HEADERS") == "1",
    }


def query_int(value: Optional[str], default: int) -> int:
    return int(value) if value else default
