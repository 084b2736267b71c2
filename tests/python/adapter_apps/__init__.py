"""One small app per Python framework, each limited the same way through ratelock's adapter for it and
configured by environment variables (``settings.py``), for the tests that drive real servers."""
