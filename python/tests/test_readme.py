"""The README's Python example runs as a newcomer would paste it."""

import re

from conftest import REPO


def readme_python_blocks():
    text = (REPO / "README.md").read_text()
    section = text.split("\n## Python\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_the_readme_example_runs(capsys):
    blocks = readme_python_blocks()
    assert len(blocks) == 1
    code = blocks[0]
    assert len(code.strip().splitlines()) <= 12
    exec(compile(code, "README.md (Python)", "exec"), {"__name__": "__readme__"})
    out = capsys.readouterr().out
    assert "(256, 256) (8, 256, 256)" in out, out


def test_the_package_docstring_example_runs():
    import doctest

    import nanobragg

    r = doctest.testmod(nanobragg, verbose=False)
    assert r.attempted >= 2 and r.failed == 0, r
