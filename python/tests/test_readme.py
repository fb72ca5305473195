# SPDX-License-Identifier: Apache-2.0
"""The README's Python section runs as written."""
import re

from conftest import REPOSITORY


def python_section():
    text = (REPOSITORY / "README.md").read_text()
    return text[text.index("\n## Python\n"):].split("\n## ", 2)[1]


def test_readme_python_example_runs(cl):
    blocks = re.findall(r"```python\n(.*?)```", python_section(), re.S)
    assert len(blocks) == 1
    namespace = {}
    exec(compile(blocks[0], "README.md", "exec"), namespace)
    assert namespace["x"].shape == (2, 100, 512)


def test_readme_one_liner_is_the_tested_one():
    assert 'import clpe; print(clpe.host_table([5, 6, 305], d=8).round(3))' in python_section()
    assert ".venv/bin/pip install ./python" in python_section()


def test_the_package_readme_runs_every_public_name():
    """python/README.md (the package's description on the index) shows each
    public name in a code block that the documentation tests run."""
    import clpe
    from conftest import HERE
    text = (HERE.parent / "README.md").read_text()
    code = "\n".join(re.findall(r"```python\n(.*?)```", text, re.S))
    names = set(clpe.__all__) | {"__version__", "VERSION_NUMBER", "MAX_D"}
    missing = sorted(name for name in names if "clpe." + name not in code)
    assert not missing, "python/README.md runs no example of %s" % ", ".join(missing)
