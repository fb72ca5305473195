# SPDX-License-Identifier: Apache-2.0
"""`python -m clpe` and the `clpe` console script: the clpe command-line tool
(host/cli of the clpe sources) that the package carries in clpe/bin/.

    python -m clpe devices
    clpe --version
"""
import os
import subprocess
import sys
from typing import List, Optional


def tool_path() -> str:
    """The path of the clpe tool inside the installed package."""
    name = "clpe.exe" if os.name == "nt" else "clpe"
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", name)


def main(argv: Optional[List[str]] = None) -> None:
    """Run the tool with argv (default: this process's arguments); its exit
    status becomes this process's."""
    arguments = sys.argv[1:] if argv is None else list(argv)
    path = tool_path()
    if not os.path.isfile(path):
        sys.exit("clpe: this installation has no command-line tool (%s): install the "
                 "package from its wheel or sdist" % path)
    sys.stdout.flush()
    sys.stderr.flush()
    if os.name == "nt":
        sys.exit(subprocess.call([path] + arguments))
    # The tool replaces this process: signals and the exit status are its own.
    os.execv(path, ["clpe"] + arguments)


if __name__ == "__main__":
    main()
