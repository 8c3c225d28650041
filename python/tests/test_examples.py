"""The package's own README (python/README.md, the index's page) shows the quickstart example
(python/examples/quickstart.py), and it runs: a still rendered, the orientation fitted back."""

import pathlib
import re
import runpy

HERE = pathlib.Path(__file__).resolve().parent.parent


def test_the_package_readme_shows_the_quickstart():
    blocks = re.findall(r"```python\n(.*?)```", (HERE / "README.md").read_text(), re.S)
    assert len(blocks) == 1
    example = (HERE / "examples" / "quickstart.py").read_text()
    code = example.split('"""', 2)[2].lstrip("\n")  # the file without its docstring
    assert blocks[0] == code


def test_the_quickstart_runs(capsys):
    runpy.run_path(str(HERE / "examples" / "quickstart.py"), run_name="__main__")
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("128x128 pixels, brightest ") and float(out[0].split()[-2]) > 100
    assert out[1] == "converged", out
    degrees = [float(v.split()[0]) for v in re.findall(r"'([+-][\d.]+ deg)'", out[2])]
    # the offset is one turn of 0.1° (about the lab x axis before the misset): its angle, whatever
    # the axes the three small rotations split it into
    assert len(degrees) == 3 and abs(sum(d * d for d in degrees) ** 0.5 - 0.1) < 0.002, out[2]
