"""The simtbx-style shim renders what the typed API renders."""

import numpy as np
import pytest

import nanobragg as nb
from nanobragg.compat.simtbx import nanoBragg


def test_simtbx_shim_spots_and_smv(tmp_path):
    SIM = nanoBragg(detpixels_slowfast=(48, 56), pixel_size_mm=0.2)
    SIM.unit_cell_tuple = (40, 50, 60, 90, 90, 90)
    SIM.Fhkl = {(h, k, l): 50.0 for h in range(-4, 5) for k in range(-4, 5) for l in range(-4, 5)}
    SIM.default_F = 5
    SIM.Ncells_abc = (4, 4, 4)
    SIM.wavelength_A = 1.1
    SIM.distance_mm = 70
    SIM.missets_deg = (3, 4, 5)
    SIM.add_nanoBragg_spots()
    want = nb.Simulator(
        nb.Crystal(cell_A_deg=(40, 50, 60, 90, 90, 90), F=SIM.Fhkl, default_F=5, N=(4, 4, 4), misset_deg=(3, 4, 5), shape="square", phi_deg=0.0),
        nb.Beam(wavelength_A=1.1), nb.Detector(pixels=(56, 48), pixel_mm=0.2, distance_mm=70), backend="cpu").render()
    assert SIM.raw_pixels.shape == (48, 56) and SIM.raw_pixels.dtype == np.float64
    assert np.array_equal(SIM.raw_pixels, want.astype(np.float64))
    SIM.add_background()
    assert (SIM.raw_pixels > want).all()
    SIM.to_smv_format(str(tmp_path / "x.img"))
    px, hdr = nb.read_smv(tmp_path / "x.img")
    assert px.shape == (48, 56) and px.max() > 0
    SIM.add_noise()
    assert SIM.raw_pixels.min() >= 0


def test_simtbx_amatrix_equals_the_cell():
    cell = nanoBragg(detpixels_slowfast=(32, 32), pixel_size_mm=0.3)
    cell.unit_cell_tuple = (50, 50, 50, 90, 90, 90)
    cell.default_F = 10
    cell.Ncells_abc = (3, 3, 3)
    cell.add_nanoBragg_spots()
    amat = nanoBragg(detpixels_slowfast=(32, 32), pixel_size_mm=0.3)
    amat.Amatrix = np.eye(3) / 50.0  # rows a*, b*, c* (1/Å) of the same unmisset cubic cell
    amat.default_F = 10
    amat.Ncells_abc = (3, 3, 3)
    amat.add_nanoBragg_spots()
    assert cell.raw_pixels.max() > 0
    assert np.allclose(amat.raw_pixels, cell.raw_pixels, rtol=1e-4, atol=1e-6 * cell.raw_pixels.max())


def test_simtbx_refuses_an_attribute_typo_naming_the_nearest():
    SIM = nanoBragg(detpixels_slowfast=(16, 16))
    with pytest.raises(AttributeError, match=r"'wavelenght_A'; did you mean 'wavelength_A'\?"):
        SIM.wavelenght_A = 1.5
    with pytest.raises(AttributeError, match=r"'Ncells_abd'; did you mean 'Ncells_abc'"):
        SIM.Ncells_abd = (5, 5, 5)
    with pytest.raises(AttributeError, match="'frobnicate'"):
        SIM.frobnicate = 1
    assert not hasattr(SIM, "wavelenght_A")
    # every attribute the shim documents (and __init__ sets) can be set
    for name in ("wavelength_A", "Amatrix", "Fhkl", "xtal_shape", "raw_pixels", "seed", "adc_offset_adu", "backend"):
        setattr(SIM, name, getattr(SIM, name))


def test_simtbx_errors_name_the_shims_attributes():
    """A bad value is refused naming the attribute the user set (``unit_cell_tuple``), not the
    typed field the shim turns it into (``Crystal.cell_A_deg``)."""
    SIM = nanoBragg(detpixels_slowfast=(16, 16))
    SIM.unit_cell_tuple = (0, 78, 38, 90, 90, 90)
    SIM.default_F = 10
    with pytest.raises(nb.UsageError, match=r"nanoBragg\.unit_cell_tuple") as e:
        SIM.add_nanoBragg_spots()
    assert "Crystal." not in str(e.value)
    SIM.unit_cell_tuple = (78, 78, 38, 90, 90, 90)
    SIM.Ncells_abc = "10"
    with pytest.raises(TypeError, match=r"nanoBragg\.Ncells_abc: expected 3 numbers \(Na, Nb, Nc\), got '10'"):
        SIM.add_nanoBragg_spots()
    SIM.Ncells_abc = (5, 5, 5)
    SIM.wavelength_A = 0.0
    with pytest.raises(nb.UsageError, match=r"nanoBragg\.wavelength_A"):
        SIM.add_nanoBragg_spots()
