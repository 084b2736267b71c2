"""The README's Python framework examples (examples/python), each in its real server over real HTTP:
/search answers 3×200 then 429, /health is never limited; and the README shows each file as it is."""

import pathlib
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import Dict, List

import pytest

from adapter_servers import free_port

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "python"
BIN = pathlib.Path(sys.executable).parent

#: Each example and the servers that run it.
SERVED: Dict[str, List[List[str]]] = {
    "flask_app.py": [[sys.executable, "flask_app.py"], ["gunicorn", "flask_app:app"]],
    "starlette_app.py": [["uvicorn", "starlette_app:app"]],
    "fastapi_app.py": [["uvicorn", "fastapi_app:app"]],
    "django_app.py": [["gunicorn", "django_app"], ["uvicorn", "django_app:asgi"]],
}


def status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as refused:
        return int(refused.code)


def command_for(program: List[str], port: int) -> List[str]:
    if program[0] == "gunicorn":
        return [str(BIN / "gunicorn"), "-w", "1", "-b", f"127.0.0.1:{port}", program[1]]
    if program[0] == "uvicorn":
        return [str(BIN / "uvicorn"), program[1], "--host", "127.0.0.1", "--port", str(port)]
    return program


@pytest.mark.parametrize(
    "example,program", [(name, program) for name, programs in SERVED.items() for program in programs], ids=str
)
def test_example_in_its_server(example: str, program: List[str]) -> None:
    port = free_port()
    import os

    env = dict(os.environ, PORT=str(port))
    env.pop("REDIS_URL", None)
    process = subprocess.Popen(command_for(program, port), cwd=EXAMPLES, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1).read()
                break
            except OSError:
                assert process.poll() is None, "the example exited"
                assert time.monotonic() < deadline, "the example did not start"
                time.sleep(0.05)
        assert [status(f"http://127.0.0.1:{port}/search") for _ in range(4)] == [200, 200, 200, 429]
        assert all(status(f"http://127.0.0.1:{port}/health") == 200 for _ in range(5))
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.mark.parametrize("example", sorted(SERVED))
def test_the_readme_shows_the_example_as_it_is(example: str) -> None:
    text = (EXAMPLES / example).read_text()
    assert text in (ROOT / "README.md").read_text(), f"README.md must show examples/python/{example} whole"
