"""The shared vectors (tests/vectors/*.json) through the Python API, on both stores, with explicit time:
the same decisions as the Rust core and the Lua scripts, converted to seconds at the edge."""

import functools
import json
import pathlib
import subprocess
import uuid

import pytest

import ratelock

VECTORS = pathlib.Path(__file__).resolve().parents[1] / "vectors"
CODES = {
    "INVALID_RULE": ratelock.InvalidRule,
    "INVALID_ARGUMENT": ratelock.InvalidArgument,
    "COST_EXCEEDS_CAPACITY": ratelock.CostExceedsCapacity,
}


def scenarios():
    return [
        pytest.param(scenario, id=f"{path.stem}/{scenario['name']}")
        for path in sorted(VECTORS.glob("*.json"))
        for scenario in json.loads(path.read_text())["scenarios"]
    ]


@pytest.fixture(params=["memory", "lua", "module"])
def vector_store_url(request, redis_server, module_server):
    """The memory store, Lua on a plain server, and the ratelock module (forced: a server that lacked
    it would fail the test, not fall back to Lua)."""
    if request.param == "memory":
        return None
    if request.param == "lua":
        return redis_server.url
    return module_server.url + "?server_code=module"


@pytest.mark.parametrize("scenario", scenarios())
def test_vectors(vector_store_url, scenario):
    store_url = vector_store_url
    limiter = ratelock.Limiter(store_url, prefix=f"v{uuid.uuid4().hex[:12]}")
    for index, step in enumerate(scenario["steps"]):
        key = step.get("key", scenario.get("key", "k"))
        rules = step.get("rules", scenario.get("rules"))
        where = f"step {index} ({step['op']} at {step['now_us']})"
        if step["op"] == "reset":
            limiter.reset(key, rules)
            continue
        if step["op"] not in ("hit", "peek", "refund", "reserve"):
            _change_entry(limiter, key, step, where)
            continue
        call = {"hit": limiter.hit, "peek": limiter.peek, "refund": limiter.refund}.get(step["op"])
        if step["op"] == "reserve":
            call = functools.partial(limiter.reserve, max_wait=step["max_wait_us"] / 1e6)
        if "expect_error" in step:
            with pytest.raises(CODES[step["expect_error"]]):
                call(key, rules, step.get("cost", 1), now_us=step["now_us"])
            continue
        decision = call(key, rules, step.get("cost", 1), now_us=step["now_us"])
        expect = step["expect"]
        got = {
            "allowed": decision.allowed,
            "limit": decision.limit,
            "remaining": decision.remaining,
            "reset_after_us": round(decision.reset_after * 1e6),
            "retry_after_us": round(decision.retry_after * 1e6),
            "rule_index": decision.rule_index,
            "reason": decision.reason,
            "would_deny": decision.would_deny,
        }
        want = {name: expect.get(name, {"reason": "rule", "would_deny": False}.get(name)) for name in got}
        assert got == want, where


def _change_entry(limiter, key, step, where):
    """`block`, `deny` or `allow` (for `for_us`), `unblock`, `clear`, `set_override` or `clear_override`,
    through the limiter's methods."""
    op, now_us = step["op"], step["now_us"]
    if op == "set_override":
        change = lambda: limiter.set_override(key, step["override_rules"], now_us=now_us)  # noqa: E731
    elif op == "clear_override":
        change = lambda: limiter.clear_override(key)  # noqa: E731
    elif op in ("block", "deny", "allow"):
        change = lambda: getattr(limiter, op)(key, step["for_us"] / 1e6, now_us=now_us)  # noqa: E731
    else:
        change = lambda: getattr(limiter, op)(key, now_us=now_us)  # noqa: E731
    if "expect_error" in step:
        with pytest.raises(CODES[step["expect_error"]]):
            change()
        return
    changed = change()
    if "expect_changed" in step:
        assert changed == step["expect_changed"], where


def _calls(server, command: str) -> int:
    info = subprocess.run(["redis-cli", "-p", str(server.port), "INFO", "commandstats"], capture_output=True, text=True)
    for line in info.stdout.lower().splitlines():
        if line.startswith(f"cmdstat_{command}:"):
            return int(line.split("calls=")[1].split(",")[0])
    return 0


def test_the_module_serves_the_calls_where_loaded_and_lua_or_scripts_where_asked(module_server):
    before = (_calls(module_server, "ratelock.limit"), _calls(module_server, "evalsha"))
    auto = ratelock.Limiter(module_server.url, prefix=f"m{uuid.uuid4().hex[:12]}")
    for _ in range(5):
        assert auto.hit("k", "10/second").allowed
    assert _calls(module_server, "ratelock.limit") - before[0] == 5
    fcalls = _calls(module_server, "fcall")
    lua = ratelock.Limiter(module_server.url + "?server_code=lua", prefix=f"l{uuid.uuid4().hex[:12]}")
    assert lua.hit("k", "10/second").allowed
    assert _calls(module_server, "fcall") == fcalls + 1, "Lua as a Redis Function"
    scripts = ratelock.Limiter(module_server.url + "?server_code=scripts", prefix=f"s{uuid.uuid4().hex[:12]}")
    assert scripts.hit("k", "10/second").allowed
    assert _calls(module_server, "evalsha") > before[1], "Lua by EVALSHA"
    assert _calls(module_server, "ratelock.limit") - before[0] == 5


def test_forcing_the_module_on_a_server_without_it_is_a_configuration_error(redis_server):
    limiter = ratelock.Limiter(redis_server.url + "?server_code=module", prefix="nomodule")
    with pytest.raises(ratelock.ConfigurationError, match="module"):
        limiter.hit("k", "10/second")
