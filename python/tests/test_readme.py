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
