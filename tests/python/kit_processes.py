"""The test kit's Rust binaries driven from Python tests: a binary that prints one line when it is
ready, then takes commands on its stdin, each answered `ok`, and stops what it started when its stdin
closes (`fault_proxy`, `sentinel_group`, built with `kit_binaries`)."""

import contextlib
import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Optional

REPO = Path(__file__).resolve().parents[2]


def kit_binaries() -> Path:
    """Builds the test kit's fault proxy, Sentinel group and checker (a no-op when they are fresh); their
    directory."""
    subprocess.run(
        ["cargo", "build", "--quiet", "-p", "ratelock-testkit",
         "--bin", "fault_proxy", "--bin", "sentinel_group", "--bin", "check_history"],
        cwd=REPO, check=True,
    )
    meta = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--no-deps"], cwd=REPO, check=True, capture_output=True
    )
    return Path(json.loads(meta.stdout)["target_directory"]) / "debug"


class KitProcess:
    """A test kit binary driven by commands on its stdin, each answered `ok`; it stops what it started
    when its stdin closes. `first_line` holds the words of the line it prints when it is ready. It runs
    in a process group of its own, with what it starts, so that one that does not stop can be killed
    whole."""

    def __init__(self, binaries: Path, name: str, *arguments: str) -> None:
        self.name = name
        self.process = subprocess.Popen(
            [str(binaries / name), *arguments], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            start_new_session=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            self.kill()
            raise AssertionError(f"{name} stopped before it was ready (its panic, if any, is above)")
        self.first_line = line.split()

    def command(self, line: str) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline().strip()
        assert answer == "ok", f"{self.name} answered {answer!r} to {line!r} (its panic, if any, is above)"

    def stop(self) -> None:
        """Closes its stdin and waits for it to stop what it started; one still running after 30 s is
        killed with its process group, and the test fails."""
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"{self.name} did not stop within 30 s of its stdin closing") from None

    def kill(self) -> None:
        """Kills the kit and everything it started (its process group)."""
        with contextlib.suppress(ProcessLookupError):  # the group is gone already
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)


class SentinelGroup(KitProcess):
    """The `sentinel_group` process: a master, its replica and three sentinels, reached by `url`. A
    `secured` group has the password `s3cret` on every process and serves TLS; `ca` is its CA's PEM. A
    `split` group has the password `m4ster` on the master and replica and `s3ntinel` on the sentinels."""

    def __init__(self, binaries: Path, secured: bool = False, split: bool = False) -> None:
        mode = ["secured"] if secured else ["split"] if split else []
        super().__init__(binaries, "sentinel_group", *mode)
        self.url = self.first_line[1]
        self.ca: Optional[bytes] = Path(self.first_line[3]).read_bytes() if secured else None
