"""Gives a musllinux wheel built by zig the libc name musllinux tools expect. zig links a musl extension
against `libc.so` (which musl's loader accepts as itself); auditwheel, and PEP 656's tooling, look for
`libc.musl-<arch>.so.1`, as Alpine's toolchain writes it. This rewrites that one DT_NEEDED entry with
patchelf and the wheel's RECORD with the new hash and size, in place.

    python scripts/musl_wheel.py dist/python/ratelock-...-musllinux_1_2_x86_64.whl
"""

import base64
import hashlib
import pathlib
import subprocess
import sys
import tempfile
import zipfile


def fix(wheel: pathlib.Path) -> None:
    arch = "aarch64" if wheel.name.endswith("_aarch64.whl") else "x86_64"
    with tempfile.TemporaryDirectory() as scratch:
        root = pathlib.Path(scratch)
        with zipfile.ZipFile(wheel) as archive:
            names = archive.namelist()
            archive.extractall(root)
        changed = []
        for name in names:
            if name.endswith(".so"):
                library = root / name
                needed = subprocess.run(["patchelf", "--print-needed", str(library)], check=True, capture_output=True, text=True).stdout.split()
                if "libc.so" in needed:
                    subprocess.run(["patchelf", "--replace-needed", "libc.so", f"libc.musl-{arch}.so.1", str(library)], check=True)
                    changed.append(name)
        if not changed:
            return
        record = next(name for name in names if name.endswith(".dist-info/RECORD"))
        lines = []
        for line in (root / record).read_text().splitlines():
            path = line.split(",", 1)[0]
            if path in changed:
                data = (root / path).read_bytes()
                digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                line = f"{path},sha256={digest},{len(data)}"
            lines.append(line)
        (root / record).write_text("\n".join(lines) + "\n")
        rebuilt = wheel.with_suffix(".tmp")
        with zipfile.ZipFile(rebuilt, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for name in names:
                archive.write(root / name, name)
        rebuilt.replace(wheel)
        print(f"{wheel.name}: {', '.join(changed)} now need libc.musl-{arch}.so.1")


if __name__ == "__main__":
    for given in sys.argv[1:]:
        fix(pathlib.Path(given))
