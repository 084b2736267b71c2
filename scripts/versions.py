"""The one version of a release, from the Cargo workspace (`[workspace.package] version`), and every
place that must follow it. `versions.py` prints it; `versions.py check` fails naming each place that
differs (run by `make test`); `versions.py stamp` writes it into the npm packages' package.json files
(run by `make dist`). The Python package takes it from Cargo through maturin (`dynamic = ["version"]`)."""

import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE_JSONS = ["bindings-node/package.json", "bindings-wasm/package.json"]


def workspace_version() -> str:
    text = (ROOT / "Cargo.toml").read_text()
    section = text.split("[workspace.package]", 1)[1].split("\n[", 1)[0]
    match = re.search(r'^version = "([^"]+)"$', section, flags=re.M)
    if match is None:
        raise SystemExit("Cargo.toml: [workspace.package] has no version")
    return match.group(1)


def differences(version: str) -> list:
    found = []
    for crate in ["core", "bindings-node", "bindings-python", "bindings-wasm"]:
        if "version.workspace = true" not in (ROOT / crate / "Cargo.toml").read_text():
            found.append(f"{crate}/Cargo.toml: version must be `version.workspace = true`")
    module = re.search(r'^version = "([^"]+)"$', (ROOT / "server-module/Cargo.toml").read_text(), flags=re.M)
    if module is None or module.group(1) != version:
        found.append(f"server-module/Cargo.toml: version {module and module.group(1)} is not {version}")
    dependency = re.search(r'^ratelock = \{ path = "core", version = "([^"]+)" \}$', (ROOT / "Cargo.toml").read_text(), flags=re.M)
    if dependency is None or dependency.group(1) != version:
        found.append(f"Cargo.toml: [workspace.dependencies] ratelock's version is not {version}")
    if 'dynamic = ["version"]' not in (ROOT / "pyproject.toml").read_text():
        found.append('pyproject.toml: the version must be dynamic = ["version"] (from Cargo)')
    for name in PACKAGE_JSONS:
        package = json.loads((ROOT / name).read_text())
        if package["version"] != version:
            found.append(f"{name}: version {package['version']} is not {version}")
        for dependency_name, wanted in package.get("optionalDependencies", {}).items():
            if wanted != version:
                found.append(f"{name}: optionalDependencies {dependency_name} {wanted} is not {version}")
    return found


def stamp(version: str) -> None:
    for name in PACKAGE_JSONS:
        path = ROOT / name
        package = json.loads(path.read_text())
        package["version"] = version
        for dependency_name in package.get("optionalDependencies", {}):
            package["optionalDependencies"][dependency_name] = version
        path.write_text(json.dumps(package, indent=2) + "\n")


def main() -> None:
    version = workspace_version()
    command = sys.argv[1] if len(sys.argv) > 1 else "print"
    if command == "print":
        print(version)
    elif command == "check":
        found = differences(version)
        if found:
            raise SystemExit("versions differ from the workspace's " + version + ":\n  " + "\n  ".join(found))
        print(f"every package is at {version}")
    elif command == "stamp":
        stamp(version)
    else:
        raise SystemExit("usage: versions.py [print|check|stamp]")


if __name__ == "__main__":
    main()
