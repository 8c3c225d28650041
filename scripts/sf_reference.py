#!/usr/bin/env python3
"""Reference structure factors for the models in tests/fixtures/models/, computed by gemmi.

    pip install gemmi==0.7.5
    python3 scripts/sf_reference.py      # rewrites tests/fixtures/models/*.sf.hkl

gemmi's StructureFactorCalculatorX is an exact direct sum over all atoms of the first model and
all symmetry images (IT92 form factors of neutral atoms, isotropic B or anisotropic U,
occupancies; no anomalous terms), i.e. the definition crate/src/sf/ implements. Each table
holds |F| for the reflections of the reciprocal-space asymmetric unit to the model's d_min,
F000 included; crate/tests/sf_gemmi.rs compares the crate's P1 table with it (and checks that
every symmetry and Friedel mate of these reflections has the same amplitude in that table).
"""
import math
import os

import gemmi

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, "..", "tests", "fixtures", "models")

# model file, d_min (Å): 2 Å keeps the tables small; the large cell of 4hhh_frag at 8 Å
CASES = [
    ("1pfe.cif", 2.0),
    ("4oz7.pdb", 2.0),
    ("5wkd.pdb", 2.0),
    ("5e5z.pdb", 2.0),
    ("5i55.cif", 2.0),
    ("hem_p1.pdb", 2.0),
    ("4hhh_frag.pdb", 8.0),
]


def reference(path, d_min):
    st = gemmi.read_structure(path)
    st.setup_cell_images()
    sg = st.find_spacegroup()
    cell = st.cell
    calc = gemmi.StructureFactorCalculatorX(cell)
    asu = gemmi.ReciprocalAsu(sg)
    hmax = [int(math.floor(x / d_min)) + 1 for x in (cell.a, cell.b, cell.c)]
    rows = []
    for h in range(-hmax[0], hmax[0] + 1):
        for k in range(-hmax[1], hmax[1] + 1):
            for l in range(-hmax[2], hmax[2] + 1):
                hkl = [h, k, l]
                if (h, k, l) != (0, 0, 0) and cell.calculate_d(hkl) < d_min:
                    continue
                if not asu.is_in(hkl):
                    continue
                f = abs(calc.calculate_sf_from_model(st[0], hkl))
                rows.append((h, k, l, f))
    natoms = sum(1 for _ in st[0].all())
    head = [
        "# reference |F| by gemmi %s StructureFactorCalculatorX (IT92, direct sum), scripts/sf_reference.py"
        % gemmi.__version__,
        "# model %s: %d atoms, space group %s (%d operations), cell %s"
        % (os.path.basename(path), natoms, sg.xhm(), len(sg.operations()),
           " ".join("%g" % v for v in cell.parameters)),
        "# d_min %g A; reciprocal asymmetric unit, %d reflections; h k l F" % (d_min, len(rows)),
    ]
    return head + ["%d %d %d %.6g" % r for r in rows]


def main():
    for name, d_min in CASES:
        path = os.path.join(MODELS, name)
        lines = reference(path, d_min)
        out = os.path.join(MODELS, os.path.splitext(name)[0] + ".sf.hkl")
        with open(out, "w") as f:
            f.write("\n".join(lines) + "\n")
        print(lines[1][2:], "->", os.path.basename(out), len(lines) - 3, "reflections")


if __name__ == "__main__":
    main()
