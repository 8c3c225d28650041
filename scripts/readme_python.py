"""Runs the README's Python example (its one ```python block) as a newcomer pastes it, with the
interpreter this is run by: test-python.sh runs it in the venv that installed the sdist."""

import pathlib
import re
import sys

readme = pathlib.Path(__file__).resolve().parents[1] / "README.md"
blocks = re.findall(r"```python\n(.*?)```", readme.read_text(), re.S)
if len(blocks) != 1:
    sys.exit(f"README.md: expected one python block, found {len(blocks)}")
exec(compile(blocks[0], "README.md (Python)", "exec"), {"__name__": "__readme__"})
