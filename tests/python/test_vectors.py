"""The shared vectors (tests/vectors/*.json) through the Python API, on both stores, with explicit time:
the same decisions as the Rust core and the Lua scripts, converted to seconds at the edge."""

import json
import pathlib
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


@pytest.mark.parametrize("scenario", scenarios())
def test_vectors(store_url, scenario):
    limiter = ratelock.Limiter(store_url, prefix=f"v{uuid.uuid4().hex[:12]}")
    for index, step in enumerate(scenario["steps"]):
        key = step.get("key", scenario.get("key", "k"))
        rules = step.get("rules", scenario.get("rules"))
        where = f"step {index} ({step['op']} at {step['now_us']})"
        if step["op"] == "reset":
            limiter.reset(key, rules)
            continue
        call = limiter.hit if step["op"] == "hit" else limiter.peek
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
        }
        want = {name: expect[name] for name in got}
        assert got == want, where
