"""Every Python example of the documentation guide (docs/guide) runs, against a real redis-server (its
URL in REDIS_URL). A block that only includes an example file (``--8<-- "examples/..."``) is covered by
test_examples.py, which runs that file in its real server; here it must name a file that is."""

import os
import pathlib
import re
import subprocess
import sys
from typing import List, Tuple

import pytest

from test_examples import SERVED

ROOT = pathlib.Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "guide"
INCLUDE = re.compile(r'^--8<-- "examples/python/([^"]+)"$')


def blocks(language: str) -> List[Tuple[str, str]]:
    """(page:line, code) of every fenced block in `language` in the guide."""
    found = []
    for page in sorted(GUIDE.rglob("*.md")):
        text = page.read_text()
        for match in re.finditer(rf"^```{language}\n(.*?)^```", text, flags=re.S | re.M):
            line = text[: match.start()].count("\n") + 1
            found.append((f"{page.relative_to(GUIDE)}:{line}", match.group(1)))
    return found


PYTHON_BLOCKS = blocks("python")


def test_the_guide_has_python_examples() -> None:
    assert len(PYTHON_BLOCKS) >= 8


@pytest.mark.parametrize("where,code", PYTHON_BLOCKS, ids=[where for where, _ in PYTHON_BLOCKS])
def test_guide_example_runs(where: str, code: str, redis_server, tmp_path) -> None:
    included = INCLUDE.match(code.strip())
    if included:
        assert included.group(1) in SERVED, f"{where} includes an example no test runs"
        return
    env = dict(os.environ, REDIS_URL=redis_server.url)
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"{where} failed:\n{done.stderr}"
