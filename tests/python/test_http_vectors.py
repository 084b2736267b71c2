"""The adapter core's shared vectors (tests/vectors/http) through the Python binding: HttpOptions,
ClientAddress and scoped_key answer exactly what the Rust core answers."""

import json
import pathlib
from typing import Any, Dict

import pytest

from ratelock import Decision
from ratelock.http import ClientAddress, HttpOptions, scoped_key

VECTORS = pathlib.Path(__file__).resolve().parents[1] / "vectors" / "http"


def load(name: str) -> Any:
    return json.loads((VECTORS / name).read_text())


def options_of(spec: Dict[str, Any]) -> HttpOptions:
    return HttpOptions(
        standard_headers=spec.get("standard_headers", "draft-11"),
        legacy_headers=spec.get("legacy_headers", False),
        partition_key=spec.get("partition_key", False),
        denied_body=spec.get("denied_body", "text"),
        status_code=spec.get("status_code", 429),
    )


@pytest.mark.parametrize("case", load("answers.json")["cases"], ids=lambda case: case["name"])
def test_answers(case: Dict[str, Any]) -> None:
    options = options_of(case.get("options", {}))
    if case["kind"] == "decision":
        figures = case["decision"]
        decision = Decision(
            case["rules"],
            allowed=figures["allowed"],
            limit=figures["limit"],
            remaining=figures["remaining"],
            reset_after=figures["reset_after_us"] / 1e6,
            retry_after=figures["retry_after_us"] / 1e6,
            rule_index=figures["rule_index"],
            degraded=figures.get("degraded", False),
        )
        answer = options.answer(decision, case.get("key", "k"), now_ms=case["now_ms"])
    elif case["kind"] == "failure":
        answer = options.failure(case["error_code"])
    else:
        answer = options.bad_key()
    got = None if answer is None else {
        "proceed": answer.proceed,
        "status": answer.status,
        "headers": [list(header) for header in answer.headers],
        "content_type": answer.content_type,
        "body": answer.body,
    }
    assert got == case["expect"]


@pytest.mark.parametrize("case", load("client_keys.json")["cases"], ids=lambda case: case["name"])
def test_client_keys(case: Dict[str, Any]) -> None:
    address = ClientAddress(
        ipv6_subnet=case.get("ipv6_subnet", 56),
        trusted_proxies=case["trusted_proxies"],
        proxy_header=case.get("proxy_header", "x-forwarded-for"),
    )
    assert address.key(case["peer"], case["forwarded"]) == case["expect"]


@pytest.mark.parametrize("case", load("scoped_keys.json")["cases"], ids=lambda case: f"{case['scope']}|{case['key']}")
def test_scoped_keys(case: Dict[str, Any]) -> None:
    assert scoped_key(case["scope"], case["key"]) == case["expect"]
    assert scoped_key(case["scope"], case["key"].encode()) == case["expect"].encode()


def test_bad_options_name_what_is_wrong() -> None:
    from ratelock import InvalidArgument

    for kwargs, name in (
        ({"standard_headers": "draft-9"}, "standard_headers"),
        ({"denied_body": "html"}, "denied_body"),
        ({"status_code": 200}, "status_code"),
    ):
        with pytest.raises(InvalidArgument, match=name):
            HttpOptions(**kwargs)
    with pytest.raises(InvalidArgument, match="ipv6_subnet"):
        ClientAddress(ipv6_subnet=0)
    with pytest.raises(InvalidArgument, match="trusted_proxies"):
        ClientAddress(trusted_proxies=["10.0.0.0/99"])
    with pytest.raises(InvalidArgument, match="trusted_proxies"):
        ClientAddress(trusted_proxies=True)
    with pytest.raises(InvalidArgument, match="key"):
        scoped_key("s", "k" * 70_000)
