"""Checks that bundled/ satisfies the server's dependencies on every bundled Python version.

For each `bundled/native/cp3X`, every distribution in `bundled/libs` and that native folder has its
`Requires-Dist` entries (with markers evaluated for Python 3.X) met by what the two folders hold.
Exit 1 with one line per missing requirement.

usage: python tools/check_bundle.py BUNDLED_DIR
"""

from __future__ import annotations

import sys
from importlib.metadata import PathDistribution
from pathlib import Path

try:
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
except ImportError:  # pip always carries a copy
    from pip._vendor.packaging.requirements import Requirement
    from pip._vendor.packaging.utils import canonicalize_name


def distributions(folder: Path) -> dict[str, PathDistribution]:
    found = {}
    for info in folder.glob("*.dist-info"):
        dist = PathDistribution(info)
        found[canonicalize_name(dist.metadata["Name"])] = dist
    return found


def problems_for(libs: Path, native: Path, minor: int) -> list[str]:
    available = {**distributions(libs), **distributions(native)}
    environment = {"python_version": f"3.{minor}", "python_full_version": f"3.{minor}.0",
                   "extra": ""}
    problems = []
    for name, dist in sorted(available.items()):
        for line in dist.requires or []:
            requirement = Requirement(line)
            if requirement.marker and not requirement.marker.evaluate(environment):
                continue
            have = available.get(canonicalize_name(requirement.name))
            if have is None:
                problems.append(f"cp3{minor}: {name} needs {requirement}, which is not bundled")
            elif not requirement.specifier.contains(have.version, prereleases=True):
                problems.append(f"cp3{minor}: {name} needs {requirement}, bundled {have.version}")
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    bundled = Path(argv[1])
    libs = bundled / "libs"
    natives = sorted((bundled / "native").glob("cp3*"))
    if not libs.is_dir() or not natives:
        print(f"check_bundle: {bundled} has no libs/ or native/cp3*", file=sys.stderr)
        return 1
    problems = []
    for native in natives:
        problems += problems_for(libs, native, int(native.name[3:]))
    for problem in problems:
        print(f"check_bundle: {problem}", file=sys.stderr)
    if not problems:
        print(f"check_bundle: dependencies complete for {', '.join(n.name for n in natives)}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
