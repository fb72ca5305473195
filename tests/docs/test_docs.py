# SPDX-License-Identifier: Apache-2.0
"""Every C, Python and shell code block of README.md, python/README.md and
docs/*.md runs as written against the build, so an example cannot rot.

- ```c: compiled as one program (-std=c11 -Wall -Wextra -Werror) against
  include/clpe.h and the built libclpe, then run; exit status 0.
- ```python: run by this interpreter (the clpe package installed in it).
- ```sh / ```bash: run by bash -euo pipefail with the built `clpe` and this
  interpreter's `python3` first on PATH, in a scratch folder that mirrors the
  checkout's top level by links (so `build/...` and `examples/...` resolve as
  from the repository root, while what a block writes lands in the scratch
  folder). A block that runs a program under build/ that this build lacks
  (an optional example) is skipped, saying which.
C and Python blocks run in a scratch folder too. A block that cannot run on its own on
purpose (it needs a variable the text defined, or takes minutes, or a
device the reader has) follows the marker `<!-- fragment: WHY -->` on the
line before its fence: Python fragments must still compile and shell
fragments parse. Blocks in other languages (text, json, cmake, ...) are
output or configuration and are not run.

CLPE_BUILD_DIR names the build folder (default: build/ of the checkout).
"""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("CLPE_BUILD_DIR", ROOT / "build")).resolve()
# A fence may be indented (a block inside a list item); its lines lose that indent.
FENCE = re.compile(r"^([ \t]*)```([\w+-]*)[ \t]*\n(.*?)^\1```[ \t]*$", re.M | re.S)
MARKER = re.compile(r"<!--\s*fragment\s*(?::\s*(.*?))?\s*-->\s*\Z", re.S)
LANGUAGES = {"c": "c", "python": "python", "py": "python", "sh": "sh", "bash": "sh",
             "shell": "sh"}
TIMEOUT = 900


def documents():
    return [ROOT / "README.md", ROOT / "python" / "README.md"] + \
        sorted((ROOT / "docs").glob("*.md"))


def code_blocks():
    found = []
    for doc in documents():
        text = doc.read_text()
        for match in FENCE.finditer(text):
            indent, language, code = match.group(1), match.group(2), match.group(3)
            language = LANGUAGES.get(language.lower())
            if language is None:
                continue
            code = "".join(line[len(indent):] if line.startswith(indent) else line
                           for line in code.splitlines(True))
            line = text.count("\n", 0, match.start()) + 1
            marker = MARKER.search(text, 0, match.start())
            reason = None
            if marker and not text[marker.end():match.start()].strip():
                reason = (marker.group(1) or "").strip()
            name = "%s:%d" % (doc.relative_to(ROOT), line)
            found.append(pytest.param(language, code, reason, id=name))
    return found


BLOCKS = code_blocks()


def test_the_documents_have_code_to_run():
    languages = {param.values[0] for param in BLOCKS if param.values[2] is None}
    assert {"c", "python", "sh"} <= languages, languages


def test_every_fragment_says_why():
    for param in BLOCKS:
        reason = param.values[2]
        assert reason is None or len(reason) >= 10, "%s: say why it cannot run" % param.id


def library_flags():
    shared = BUILD / "libclpe.so"
    if shared.exists():
        return [str(shared), "-Wl,-rpath," + str(BUILD)]
    static = BUILD / "libclpe.a"
    assert static.exists(), "no libclpe in %s: build first, or set CLPE_BUILD_DIR" % BUILD
    return [str(static), "-lmpfr", "-lgmp", "-lpthread"]


def run(command, cwd, **kwargs):
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT,
                            **kwargs)
    assert result.returncode == 0, "%s exited %d\nstdout:\n%s\nstderr:\n%s" % (
        command[0], result.returncode, result.stdout[-4000:], result.stderr[-4000:])
    return result


@pytest.mark.parametrize("language, code, fragment", BLOCKS)
def test_code_block(language, code, fragment, tmp_path):
    if fragment is not None:
        if language == "python":
            compile(code, "block", "exec")
        elif language == "sh":
            run(["bash", "-n", "-c", code], tmp_path)
        return
    if language == "c":
        source = tmp_path / "example.c"
        source.write_text(code)
        cc = os.environ.get("CC", "cc")
        run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", str(ROOT / "include"),
             str(source), "-o", str(tmp_path / "example")] + library_flags() +
            ["-lOpenCL", "-lm"], tmp_path)
        run([str(tmp_path / "example")], tmp_path)
    elif language == "python":
        script = tmp_path / "example.py"
        script.write_text(code)
        run([sys.executable, str(script)], tmp_path)
    else:
        for path in re.findall(r"(?<![\w/.$-])build/[\w./+-]*\w", code):
            if not (BUILD / path[len("build/"):]).exists():
                pytest.skip("%s is not built here" % path)
        work = tmp_path / "work"
        work.mkdir()
        for entry in ROOT.iterdir():
            if entry.name not in (".git", "build"):
                (work / entry.name).symlink_to(entry)
        (work / "build").symlink_to(BUILD)
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        for program in (BUILD / "host" / "cli" / "clpe", BUILD / "bench" / "clpe-bench"):
            if program.exists():
                (bin_dir / program.name).symlink_to(program)
        # python3: this interpreter (a venv's finds its packages from its own folder)
        path = [str(bin_dir), os.path.dirname(sys.executable), os.environ["PATH"]]
        env = dict(os.environ, PATH=os.pathsep.join(path))
        run(["bash", "-euo", "pipefail", "-c", code], work, env=env)
