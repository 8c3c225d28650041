"""Every code block of the README and of docs/ runs as a reader would paste it, so the
documentation cannot rot.

Blocks are fenced with a language: ``python`` blocks run in one namespace per document,
``sh`` blocks under ``bash -euo pipefail`` with the built ``nanobragg``, ``nonbragg``,
``noisify`` and this package's ``nanobragg-dataset`` on ``PATH``, all from a scratch folder
holding links to the repository's ``tests/``, ``crate/``, ``python/`` and ``www/`` (so the
documents' paths are the repository's). ``html`` and ``js`` blocks (the embedding guide) run in
the browser test ``tests/browser/readme.test.mjs``. The line before a fence may say
``<!-- not run: WHY -->`` (an install, a server: the block is listed, never run) or
``<!-- file: NAME -->`` (the block is written to NAME for the blocks after it).
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import re
import subprocess
import sys

import pytest
from conftest import REPO, cli_path

LANGUAGES = {"python", "sh", "toml", "html", "js"}
BROWSER = {"html", "js"}
BROWSER_DOCS = {"README.md", "docs/embedding.md"}
LINKED = ("tests", "crate", "python", "www")
NOT_DOCS = {"docs/MODEL.md", "docs/ARCHITECTURE.md"}  # reference texts: formulas, no code blocks


@dataclasses.dataclass
class Block:
    doc: str
    line: int
    lang: str
    code: str
    not_run: str | None = None
    file: str | None = None


def documents() -> list[str]:
    docs = ["README.md"] + sorted(f"docs/{p.name}" for p in (REPO / "docs").glob("*.md"))
    return [d for d in docs if d not in NOT_DOCS]


def blocks(doc: str) -> list[Block]:
    lines = (REPO / doc).read_text().split("\n")
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = re.fullmatch(r"```(\S*)\s*", lines[i])
        if not m:
            i += 1
            continue
        start, lang = i, m.group(1)
        j = i + 1
        while j < len(lines) and lines[j].rstrip() != "```":
            j += 1
        assert j < len(lines), f"{doc}:{start + 1}: a code block that is never closed"
        b = Block(doc, start + 1, lang, "\n".join(lines[start + 1 : j]) + "\n")
        prev = lines[start - 1].strip() if start else ""
        if mm := re.fullmatch(r"<!-- not run: (.+?) -->", prev):
            b.not_run = mm.group(1)
        elif mm := re.fullmatch(r"<!-- file: (\S+) -->", prev):
            b.file = mm.group(1)
        out.append(b)
        i = j + 1
    return out


def code_blocks(doc: str) -> list[Block]:
    """The blocks with a language (a fence without one is text: a formula, a listing)."""
    return [b for b in blocks(doc) if b.lang]


def test_every_block_is_one_the_tests_run():
    found, skipped = 0, []
    for doc in documents():
        for b in code_blocks(doc):
            found += 1
            where = f"{doc}:{b.line}"
            assert b.lang in LANGUAGES, f"{where}: a ```{b.lang} block, which no test runs"
            if b.lang in BROWSER:
                assert doc in BROWSER_DOCS, f"{where}: browser snippets live in docs/embedding.md"
            if b.lang == "toml":
                assert b.file or b.not_run, f"{where}: a toml block is a file (<!-- file: NAME -->) or not run"
            if b.not_run:
                assert len(b.not_run) > 10, f"{where}: say why the block is not run"
                skipped.append(f"{where} ({b.not_run})")
    print(f"{found} code blocks; not run: {len(skipped)}")
    print("\n".join(skipped))
    assert found >= 15
    # the not-run blocks are installs, servers, synopses and minutes-long runs: few
    assert len(skipped) <= 10, skipped


def test_the_readme_example_is_short():
    python = [b for b in code_blocks("README.md") if b.lang == "python"]
    assert len(python) == 1 and len(python[0].code.strip().splitlines()) <= 12


def _scratch(tmp_path: pathlib.Path) -> None:
    for name in LINKED:
        (tmp_path / name).symlink_to(REPO / name, target_is_directory=True)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(cli_path().parent), str(pathlib.Path(sys.executable).parent), env["PATH"]])
    return env


@pytest.mark.parametrize("doc", [d for d in documents() if any(not b.not_run and b.lang in {"python", "sh"} for b in code_blocks(d))])
def test_the_blocks_of(doc, tmp_path, capsys):
    _scratch(tmp_path)
    namespace: dict = {"__name__": f"__docs__.{doc}"}
    ran = 0
    for b in code_blocks(doc):
        if b.not_run or b.lang in BROWSER:
            continue
        where = f"{doc}:{b.line}"
        if b.file:
            (tmp_path / b.file).write_text(b.code)
        elif b.lang == "python":
            exec(compile(b.code, where, "exec"), namespace)
            ran += 1
        elif b.lang == "sh":
            r = subprocess.run(["bash", "-euo", "pipefail", "-c", b.code], cwd=tmp_path, env=_env(),
                               capture_output=True, text=True, timeout=600)
            assert r.returncode == 0, f"{where}: exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}"
            ran += 1
    assert ran > 0
    out = capsys.readouterr().out
    if doc == "README.md":
        assert "(256, 256) (8, 256, 256)" in out, out


def test_the_cli_examples_write_what_they_say(tmp_path):
    """The README's CLI example writes the files its text names."""
    _scratch(tmp_path)
    sh = [b for b in code_blocks("README.md") if b.lang == "sh" and not b.not_run]
    assert len(sh) == 1
    subprocess.run(["bash", "-euo", "pipefail", "-c", sh[0].code], cwd=tmp_path, env=_env(), check=True, capture_output=True)
    size = 256 * 256
    assert (tmp_path / "float.bin").stat().st_size == 4 * size
    assert (tmp_path / "image.img").stat().st_size > 2 * size
    assert (tmp_path / "noiseimage.img").exists() and not (tmp_path / "image.pgm").exists()


def test_the_package_docstring_example_runs():
    import doctest

    import nanobragg

    r = doctest.testmod(nanobragg, verbose=False)
    assert r.attempted >= 2 and r.failed == 0, r
