# SPDX-License-Identifier: Apache-2.0
"""The README's C example builds and runs with the README's own commands,
from a fresh clone: the install block of "Building and packaging", the
example saved as example.c, then the link-and-run block after it. What those
commands leave in the clone is ignored by its .gitignore.

The clone holds what `git clone` of this checkout would, with the working
tree's changes: the files git tracks or would track."""
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.M | re.S)
TIMEOUT = 1800


def blocks(language):
    text = (ROOT / "README.md").read_text()
    return [code for lang, code in FENCE.findall(text) if lang == language]


def the_block(language, *needles):
    found = [code for code in blocks(language) if all(n in code for n in needles)]
    assert len(found) == 1, "README.md: %d %s blocks hold %r" % (len(found), language, needles)
    return found[0]


def run(command, cwd, **kwargs):
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT,
                            **kwargs)
    assert result.returncode == 0, "%s exited %d\nstdout:\n%s\nstderr:\n%s" % (
        command, result.returncode, result.stdout[-4000:], result.stderr[-4000:])
    return result


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    listed = run(["git", "ls-files", "-co", "--exclude-standard", "-z"], ROOT).stdout
    target = tmp_path_factory.mktemp("clone") / "clpe"
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if not source.exists() and not source.is_symlink():
            continue  # deleted in the working tree
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            (target / name).symlink_to(source.readlink())
        else:
            shutil.copy2(source, target / name)
    git = ["git", "-c", "user.name=clpe", "-c", "user.email=clpe@invalid"]
    run(git + ["init", "-q"], target)
    run(git + ["add", "-A"], target)
    run(git + ["commit", "-q", "-m", "clone"], target)
    return target


def test_the_readme_c_example_builds_and_runs_from_a_clone(clone):
    install = the_block("sh", "cmake --install", "clpe-prefix")
    link = the_block("sh", "example.c", "./example")
    example = the_block("c", "int main")
    run(["bash", "-euo", "pipefail", "-c", install], clone)
    (clone / "example.c").write_text(example)
    run(["bash", "-euo", "pipefail", "-c", link], clone)
    # No library path set: the rpath alone finds libclpe.
    run(["env", "-u", "LD_LIBRARY_PATH", str(clone / "example")], clone)
    status = run(["git", "status", "--porcelain", "--untracked-files=all"], clone).stdout
    assert status == "", "the README's commands leave files git does not ignore:\n" + status
