//! NeXus/NXmx output (`-nexus FILE`): the one NeXus writer of the code base (the CLI now; the
//! page's download and the dataset tool through the same [`write_nxmx`]). One image or a
//! rotation series, as DIALS' dxtbx (`FormatNXmx`) and other NXmx readers read it:
//!
//! ```text
//! /entry                      NXentry   definition = "NXmx"
//!   data/data                 NXdata    int32 (images, slow, fast): one chunk per image,
//!                                       shuffle + deflate (standard HDF5 filters), or
//!                                       bitshuffle + LZ4 (`NxCompression::BitshuffleLz4`)
//!   instrument                NXinstrument
//!     beam                    NXbeam    incident_wavelength (Å)
//!     detector                NXdetector  sensor_material/thickness, saturation_value,
//!                                       underload_value, x/y_pixel_size, count_time,
//!                                       pixel_mask (bit 0: gap between modules; left out
//!                                       when a module is narrower than the image), depends_on
//!       transformations/detector_origin   translation to the first module's frame
//!       <panel name>          NXdetector_module, one per panel: data_origin/size/stride,
//!                             module_offset, fast_pixel_direction, slow_pixel_direction
//!   sample                    NXsample  depends_on -> transformations/phi (rotation, one angle
//!                                       per image, phi_end, phi_increment_set)
//! ```
//!
//! Geometry is given in nanoBragg's lab frame ([`NxGeometry`], metres) and written in the NeXus
//! (McStas) frame: z along the beam, the rotation taking nanoBragg's beam onto +z and, for
//! the MOSFLM-like frame (beam +x), `(x, y, z) -> (-z, y, x)`; dxtbx then maps McStas to its
//! imgCIF frame by diag(-1, 1, -1), which composes to nanoBragg's `DIALS_ORIGIN` mapping
//! (MODEL §3.5). Lengths are written in mm, angles in degrees.
//!
//! Library: `hdf5-pure` (pure Rust, no C library, builds for wasm32, writes files that the HDF5
//! C library 1.10+ and h5py read). By default the frames are shuffle + deflate level 4 (gzip),
//! which every HDF5 reader decodes (docs/dials.md), compressed on rayon's current pool (the
//! vendored hdf5-pure's `rayon` feature, vendor/README.md). [`NxCompression::BitshuffleLz4`]
//! writes them as EIGER files do: the bitshuffle filter (HDF5 filter 32008, client values
//! 0, 2, 4, 0, 2: LZ4) — 6–13× less CPU to write than deflate; noisy frames 12 % larger at
//! 512², 4 % smaller on an EIGER2 4M with tens of photons a pixel, mostly empty ones about 3×
//! larger (docs/benchmarks.md, Datasets) — which a reader decodes only with the filter's
//! plugin (h5py: `import hdf5plugin`; the HDF5 C library, as DIALS uses it: Debian's
//! `bitshuffle` package, or `HDF5_PLUGIN_PATH`). Those chunks are made here
//! ([`bitshuffle_lz4_encode`], frames on rayon's pool) and handed to hdf5-pure as filtered
//! chunks (its `with_filtered_chunks`, the vendored change). Either way the file's bytes do
//! not depend on the number of threads.

use crate::error::{Error, Result};
use crate::io::bitshuffle::{bitshuffle_lz4_encode, FILTER_BITSHUFFLE};
use hdf5_pure::{AttrValue, FileBuilder};
use rayon::prelude::*;

type V3 = [f64; 3];

/// One detector panel (module) in nanoBragg's lab frame.
#[derive(Clone, Debug, PartialEq)]
pub struct NxPanel {
    pub name: String,
    pub fast_pixels: usize,
    pub slow_pixels: usize,
    /// m.
    pub pixel: f64,
    /// The outer corner of the panel's first pixel, m.
    pub origin: V3,
    pub fast: V3,
    pub slow: V3,
    /// Where the panel's pixels sit in the stored image (fast, slow).
    pub data_origin: (usize, usize),
}

/// The experiment around the images (nanoBragg's lab frame, SI units unless named).
#[derive(Clone, Debug, PartialEq)]
pub struct NxGeometry {
    /// Direction of propagation of the beam (unit).
    pub beam: V3,
    /// Å.
    pub wavelength: f64,
    pub panels: Vec<NxPanel>,
    /// The stored image (fast, slow).
    pub image_size: (usize, usize),
    /// "Si", "CdTe", ... (dxtbx requires a known material and a positive thickness: the CLI
    /// writes a detector with no simulated sensor as 1 nm of Si, a parallax below 1e-9 mm).
    pub sensor_material: String,
    /// m.
    pub sensor_thickness: f64,
    /// Largest trusted count.
    pub saturation: i64,
    /// Rotation axis (unit), the φ of the first image's start and each image's width (degrees).
    pub spindle: V3,
    pub phi_start: f64,
    pub osc: f64,
    /// Exposure per image, s.
    pub exposure: f64,
    /// 1 active, 0 not (module gaps), one per stored pixel; `None`: all active.
    pub mask: Option<Vec<u8>>,
    pub description: String,
}

fn dot(a: V3, b: V3) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}
fn norm(a: V3) -> f64 {
    dot(a, a).sqrt()
}

/// The rotation (rows) from nanoBragg's lab frame to NeXus' McStas frame: nanoBragg's beam
/// goes to +z; for a beam along +x (MOSFLM, DENZO, CUSTOM default) it is (x, y, z) -> (-z, y, x),
/// and any other beam is first turned onto +x about beam × x.
pub fn to_mcstas(beam: V3) -> [V3; 3] {
    let mosflm = [[0.0, 0.0, -1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]];
    let n = norm(beam);
    let b = [beam[0] / n, beam[1] / n, beam[2] / n];
    let c = b[0]; // cos of the angle to +x
                  // axis b × x = (0, b_z, -b_y)
    let (ay, az) = (b[2], -b[1]);
    let s = (ay * ay + az * az).sqrt();
    let align: [V3; 3] = if s < 1e-15 && c > 0.0 {
        [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    } else if s < 1e-15 {
        // antiparallel: half a turn about y
        [[-1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, -1.0]]
    } else {
        // Rodrigues: R = cI + s[k]x + (1-c) k k^T with k = (0, ay, az)/s
        let (ky, kz) = (ay / s, az / s);
        let t = 1.0 - c;
        [
            [c, -s * kz, s * ky],
            [s * kz, c + t * ky * ky, t * ky * kz],
            [-s * ky, t * ky * kz, c + t * kz * kz],
        ]
    };
    let mut r = [[0.0; 3]; 3];
    for i in 0..3 {
        for j in 0..3 {
            r[i][j] = (0..3).map(|k| mosflm[i][k] * align[k][j]).sum();
        }
    }
    r
}

fn apply(r: &[V3; 3], v: V3) -> V3 {
    [dot(r[0], v), dot(r[1], v), dot(r[2], v)]
}

fn unit_or_x(v: V3) -> (V3, f64) {
    let n = norm(v);
    if n == 0.0 {
        ([1.0, 0.0, 0.0], 0.0)
    } else {
        ([v[0] / n, v[1] / n, v[2] / n], n)
    }
}

fn text(v: &str) -> AttrValue {
    AttrValue::String(v.to_string())
}

/// A frame's counts as stored (little-endian int32): the frame itself on a little-endian
/// machine, else byte-swapped.
fn le_frame(f: &[i32]) -> std::borrow::Cow<'_, [i32]> {
    if cfg!(target_endian = "little") {
        std::borrow::Cow::Borrowed(f)
    } else {
        std::borrow::Cow::Owned(f.iter().map(|v| v.to_le()).collect())
    }
}

fn nx_error(what: impl std::fmt::Display) -> Error {
    Error::input(format!("NeXus writer: {what}"))
}

/// A complete NXmx file: `images` are the frames (each `image_size.0 * image_size.1` counts,
/// fast index first), frame k covering φ from `phi_start + k·osc` to `+ osc`.
pub fn write_nxmx(g: &NxGeometry, images: &[&[i32]]) -> Result<Vec<u8>> {
    write_nxmx_frames(g, images, &NxFrames::default())
}

/// What may differ between the frames of a file beyond [`NxGeometry`] (the dataset tool's
/// stills and per-image λ). NXmx allows per-frame detector positions too, but dxtbx reads the
/// detector of the first frame only, so a per-image distance or beam centre is not offered.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NxFrames {
    /// Stills: `/entry/sample/depends_on` is not written, so dxtbx reads each frame as a still
    /// (no scan), not as a rotation sweep (the φ arrays stay, for the record).
    pub still: bool,
    /// One wavelength (Å) per frame, written as `incident_wavelength` of shape (frames): dxtbx
    /// gives frame k the beam of entry k. `None`: the geometry's one wavelength.
    pub wavelengths: Option<Vec<f64>>,
    /// How the frames are compressed.
    pub compression: NxCompression,
}

/// The frames' HDF5 filters (one chunk per frame either way).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NxCompression {
    /// Shuffle + deflate level 4: standard HDF5 filters, every reader decodes them.
    #[default]
    Deflate,
    /// Bitshuffle + LZ4 (filter 32008), as EIGER files: much cheaper to write, a little larger,
    /// read with the bitshuffle plugin (hdf5plugin, Debian's `bitshuffle`).
    BitshuffleLz4,
}

impl NxCompression {
    /// The names the CLI and the dataset tool take.
    pub const NAMES: [&'static str; 2] = ["deflate", "bslz4"];

    /// `"deflate"` or `"bslz4"`.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "deflate" => Some(Self::Deflate),
            "bslz4" => Some(Self::BitshuffleLz4),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Deflate => "deflate",
            Self::BitshuffleLz4 => "bslz4",
        }
    }
}

/// The bitshuffle filter as EIGER files record it: its version words 0, 2, element size 4
/// (int32), block size 0 (the library's default), compression 2 (LZ4).
fn bitshuffle_filter() -> hdf5_pure::Filter {
    hdf5_pure::Filter::new(
        FILTER_BITSHUFFLE,
        Some("bitshuffle; see https://github.com/kiyo-masui/bitshuffle".into()),
        false,
        vec![0, 2, 4, 0, 2],
    )
}

/// [`write_nxmx`] with per-frame options ([`NxFrames`]).
pub fn write_nxmx_frames(g: &NxGeometry, images: &[&[i32]], frames: &NxFrames) -> Result<Vec<u8>> {
    let (w, h) = g.image_size;
    if let Some(i) = images.iter().position(|im| im.len() != w * h) {
        return Err(nx_error(format_args!(
            "image {i} holds {} pixels, not {w}x{h}",
            images[i].len()
        )));
    }
    let all: Vec<i32> = images.iter().flat_map(|im| im.iter().copied()).collect();
    write_nxmx_series(g, &all, images.len(), frames)
}

/// [`write_nxmx_frames`] of `n` frames stored one after another in `data` (`n` ·
/// `image_size.0` · `image_size.1` counts): the same file, without a copy of the frames to
/// gather them (the dataset tool's shards, one (frames, slow, fast) array).
pub fn write_nxmx_series(
    g: &NxGeometry,
    data: &[i32],
    n: usize,
    frames: &NxFrames,
) -> Result<Vec<u8>> {
    let (w, h) = g.image_size;
    if let Some(l) = &frames.wavelengths {
        if l.len() != n {
            return Err(nx_error(format_args!(
                "{} wavelengths for {n} frames",
                l.len()
            )));
        }
        if let Some(k) = l.iter().position(|v| !(v.is_finite() && *v > 0.0)) {
            return Err(nx_error(format_args!(
                "the wavelength of frame {k} is {}, not a positive number",
                l[k]
            )));
        }
    }
    if n == 0 {
        return Err(nx_error("no image to write"));
    }
    if data.len() != n * w * h {
        return Err(nx_error(format_args!(
            "{} counts for {n} frames of {w}x{h} pixels",
            data.len()
        )));
    }
    if g.panels.is_empty() {
        return Err(nx_error("no detector panel"));
    }
    if g.mask.as_ref().is_some_and(|m| m.len() != w * h) {
        return Err(nx_error("the mask is not the image's size"));
    }
    let r = to_mcstas(g.beam);
    let mm = |v: V3| {
        let m = apply(&r, v);
        [m[0] * 1000.0, m[1] * 1000.0, m[2] * 1000.0]
    };
    let mut f = FileBuilder::new();

    let mut entry = f.create_group("entry");
    entry.set_attr("NX_class", text("NXentry"));
    entry.set_attr("default", text("data"));
    entry
        .create_dataset("definition")
        .with_ascii_strings(&["NXmx"])
        .map_err(nx_error)?
        .with_shape(&[]);

    // the images: one chunk per image, shuffle + deflate or bitshuffle + LZ4
    let mut data_group = entry.create_group("data");
    data_group.set_attr("NX_class", text("NXdata"));
    data_group.set_attr("signal", text("data"));
    let shape = [n as u64, h as u64, w as u64];
    let chunk = [1, h as u64, w as u64];
    match frames.compression {
        NxCompression::Deflate => {
            data_group
                .create_dataset("data")
                .with_i32_data(data)
                .with_shape(&shape)
                .with_chunks(&chunk)
                .with_shuffle()
                .with_deflate(4);
        }
        NxCompression::BitshuffleLz4 => {
            // each frame on its own (rayon's pool): its little-endian bytes, encoded
            let chunks: Vec<Vec<u8>> = data
                .par_chunks(w * h)
                .map(|f| bitshuffle_lz4_encode(bytemuck::cast_slice(&le_frame(f)), 4))
                .collect();
            data_group
                .create_dataset("data")
                .with_filtered_chunks(
                    hdf5_pure::make_i32_type(),
                    &shape,
                    &chunk,
                    &[bitshuffle_filter()],
                    chunks,
                )
                .map_err(nx_error)?;
        }
    }
    entry.add_group(data_group.finish());

    let mut inst = entry.create_group("instrument");
    inst.set_attr("NX_class", text("NXinstrument"));
    inst.create_dataset("name")
        .with_ascii_strings(&["nanoBragg Web simulation"])
        .map_err(nx_error)?
        .with_shape(&[]);

    let mut beam = inst.create_group("beam");
    beam.set_attr("NX_class", text("NXbeam"));
    match &frames.wavelengths {
        None => beam
            .create_dataset("incident_wavelength")
            .with_f64_data(&[g.wavelength])
            .with_shape(&[])
            .set_attr("units", text("angstrom")),
        Some(l) => beam
            .create_dataset("incident_wavelength")
            .with_f64_data(l)
            .with_shape(&[l.len() as u64])
            .set_attr("units", text("angstrom")),
    };
    inst.add_group(beam.finish());

    let mut det = inst.create_group("detector");
    det.set_attr("NX_class", text("NXdetector"));
    let scalar_str = |grp: &mut hdf5_pure::GroupBuilder, key: &str, v: &str| -> Result<()> {
        grp.create_dataset(key)
            .with_ascii_strings(&[v])
            .map_err(nx_error)?
            .with_shape(&[]);
        Ok(())
    };
    scalar_str(&mut det, "description", &g.description)?;
    scalar_str(&mut det, "sensor_material", &g.sensor_material)?;
    scalar_str(&mut det, "type", "PAD")?;
    let scalar = |grp: &mut hdf5_pure::GroupBuilder, key: &str, v: f64, units: &str| {
        let d = grp.create_dataset(key);
        d.with_f64_data(&[v]).with_shape(&[]);
        if !units.is_empty() {
            d.set_attr("units", text(units));
        }
    };
    scalar(
        &mut det,
        "sensor_thickness",
        g.sensor_thickness * 1000.0,
        "mm",
    );
    let p0 = &g.panels[0];
    scalar(&mut det, "x_pixel_size", p0.pixel * 1000.0, "mm");
    scalar(&mut det, "y_pixel_size", p0.pixel * 1000.0, "mm");
    scalar(&mut det, "count_time", g.exposure, "s");
    scalar(&mut det, "frame_time", g.exposure, "s");
    det.create_dataset("saturation_value")
        .with_i64_data(&[g.saturation])
        .with_shape(&[]);
    det.create_dataset("underload_value")
        .with_i64_data(&[0])
        .with_shape(&[]);
    // dxtbx 3.12 (Debian's DIALS) slices `pixel_mask` per module as a numpy view and fails
    // ("numpy array is non-c-contiguous") when a module is narrower than the image: there the
    // mask is left out (the gaps belong to no module, other masked pixels are -1 in the data)
    let mask_readable = g.panels.len() == 1 || g.panels.iter().all(|p| p.fast_pixels == w);
    if let Some(m) = g.mask.as_ref().filter(|_| mask_readable) {
        let mask: Vec<u32> = m.iter().map(|&v| (v == 0) as u32).collect();
        det.create_dataset("pixel_mask")
            .with_u32_data(&mask)
            .with_shape(&[h as u64, w as u64])
            .with_chunks(&[h as u64, w as u64])
            .with_deflate(4);
    }
    // the detector's frame: a translation to the first panel's origin; each module's offset is
    // relative to it
    let det_path = "/entry/instrument/detector";
    let (ou, olen) = unit_or_x(mm(p0.origin));
    det.create_dataset("depends_on")
        .with_ascii_strings(&[&format!("{det_path}/transformations/detector_origin")])
        .map_err(nx_error)?
        .with_shape(&[]);
    let mut tr = det.create_group("transformations");
    tr.set_attr("NX_class", text("NXtransformations"));
    tr.create_dataset("detector_origin")
        .with_f64_data(&[olen])
        .with_shape(&[1])
        .set_attr("transformation_type", text("translation"))
        .set_attr("vector", AttrValue::F64Array(ou.to_vec()))
        .set_attr("offset", AttrValue::F64Array(vec![0.0; 3]))
        .set_attr("units", text("mm"))
        .set_attr("depends_on", text("."));
    det.add_group(tr.finish());
    let origin0 = mm(p0.origin);
    for p in &g.panels {
        let mut m = det.create_group(&p.name);
        m.set_attr("NX_class", text("NXdetector_module"));
        m.create_dataset("data_origin")
            .with_i32_data(&[p.data_origin.1 as i32, p.data_origin.0 as i32]);
        m.create_dataset("data_size")
            .with_i32_data(&[p.slow_pixels as i32, p.fast_pixels as i32]);
        m.create_dataset("data_stride").with_i32_data(&[1, 1]);
        let here = format!("{det_path}/{}", p.name);
        let o = mm(p.origin);
        let rel = [o[0] - origin0[0], o[1] - origin0[1], o[2] - origin0[2]];
        m.create_dataset("module_offset")
            .with_f64_data(&[0.0])
            .with_shape(&[1])
            .set_attr("transformation_type", text("translation"))
            .set_attr("vector", AttrValue::F64Array(vec![1.0, 0.0, 0.0]))
            .set_attr("offset", AttrValue::F64Array(rel.to_vec()))
            .set_attr("offset_units", text("mm"))
            .set_attr("units", text("mm"))
            .set_attr(
                "depends_on",
                text(&format!("{det_path}/transformations/detector_origin")),
            );
        for (key, v) in [
            ("fast_pixel_direction", p.fast),
            ("slow_pixel_direction", p.slow),
        ] {
            let (u, _) = unit_or_x(apply(&r, v));
            m.create_dataset(key)
                .with_f64_data(&[p.pixel * 1000.0])
                .with_shape(&[1])
                .set_attr("transformation_type", text("translation"))
                .set_attr("vector", AttrValue::F64Array(u.to_vec()))
                .set_attr("offset", AttrValue::F64Array(vec![0.0; 3]))
                .set_attr("units", text("mm"))
                .set_attr("depends_on", text(&format!("{here}/module_offset")));
        }
        det.add_group(m.finish());
    }
    inst.add_group(det.finish());
    entry.add_group(inst.finish());

    // the goniometer: one rotation about the spindle, one angle per image
    let mut sample = entry.create_group("sample");
    sample.set_attr("NX_class", text("NXsample"));
    scalar_str(&mut sample, "name", "simulated crystal")?;
    if !frames.still {
        scalar_str(
            &mut sample,
            "depends_on",
            "/entry/sample/transformations/phi",
        )?;
    }
    let mut st = sample.create_group("transformations");
    st.set_attr("NX_class", text("NXtransformations"));
    let (axis, _) = unit_or_x(apply(&r, g.spindle));
    let start: Vec<f64> = (0..n).map(|k| g.phi_start + k as f64 * g.osc).collect();
    let end: Vec<f64> = start.iter().map(|s| s + g.osc).collect();
    st.create_dataset("phi")
        .with_f64_data(&start)
        .with_shape(&[n as u64])
        .set_attr("transformation_type", text("rotation"))
        .set_attr("vector", AttrValue::F64Array(axis.to_vec()))
        .set_attr("offset", AttrValue::F64Array(vec![0.0; 3]))
        .set_attr("units", text("deg"))
        .set_attr("depends_on", text("."));
    st.create_dataset("phi_end")
        .with_f64_data(&end)
        .with_shape(&[n as u64])
        .set_attr("units", text("deg"));
    st.create_dataset("phi_increment_set")
        .with_f64_data(&[g.osc])
        .with_shape(&[])
        .set_attr("units", text("deg"));
    sample.add_group(st.finish());
    entry.add_group(sample.finish());

    f.add_group(entry.finish());
    f.finish().map_err(nx_error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdf5_pure::File;

    #[test]
    fn frames_map_the_beam_to_z() {
        let r = to_mcstas([1.0, 0.0, 0.0]);
        assert_eq!(apply(&r, [1.0, 0.0, 0.0]), [0.0, 0.0, 1.0]);
        assert_eq!(apply(&r, [0.0, 0.0, 1.0]), [-1.0, 0.0, 0.0]);
        assert_eq!(apply(&r, [0.0, 1.0, 0.0]), [0.0, 1.0, 0.0]);
        for beam in [[0.0, 0.0, 1.0], [0.3, -0.4, 0.5], [-1.0, 0.0, 0.0]] {
            let r = to_mcstas(beam);
            let z = apply(&r, beam);
            let n = norm(beam);
            assert!(
                (z[2] - n).abs() < 1e-12 && z[0].abs() < 1e-12,
                "{beam:?} -> {z:?}"
            );
            // a proper rotation
            let det = dot(
                r[0],
                [
                    r[1][1] * r[2][2] - r[1][2] * r[2][1],
                    r[1][2] * r[2][0] - r[1][0] * r[2][2],
                    r[1][0] * r[2][1] - r[1][1] * r[2][0],
                ],
            );
            assert!((det - 1.0).abs() < 1e-12);
        }
    }

    fn geometry() -> NxGeometry {
        NxGeometry {
            beam: [1.0, 0.0, 0.0],
            wavelength: 0.98,
            panels: vec![NxPanel {
                name: "module".into(),
                fast_pixels: 3,
                slow_pixels: 2,
                pixel: 172e-6,
                origin: [0.1, 0.02, -0.03],
                fast: [0.0, 0.0, 1.0],
                slow: [0.0, -1.0, 0.0],
                data_origin: (0, 0),
            }],
            image_size: (3, 2),
            sensor_material: "Si".into(),
            sensor_thickness: 450e-6,
            saturation: 1048575,
            spindle: [0.0, 0.0, 1.0],
            phi_start: 10.0,
            osc: 0.5,
            exposure: 0.1,
            mask: Some(vec![1, 1, 0, 1, 1, 0]),
            description: "test".into(),
        }
    }

    #[test]
    fn layout_read_back() {
        let g = geometry();
        let a = [1, 2, 3, 4, 5, 6];
        let b = [7, 8, 9, 10, 11, -1];
        let bytes = write_nxmx(&g, &[&a, &b]).unwrap();
        let f = File::from_bytes(bytes).unwrap();
        let d = f.dataset("entry/data/data").unwrap();
        assert_eq!(d.shape().unwrap(), vec![2, 2, 3]);
        assert_eq!(d.read::<i32>().unwrap(), [a, b].concat());
        let phi = f.dataset("entry/sample/transformations/phi").unwrap();
        assert_eq!(phi.read_f64().unwrap(), vec![10.0, 10.5]);
        let end = f.dataset("entry/sample/transformations/phi_end").unwrap();
        assert_eq!(end.read_f64().unwrap(), vec![10.5, 11.0]);
        let attrs = phi.attrs().unwrap();
        assert_eq!(
            attrs.get("vector").and_then(|v| v.to_f64s()),
            Some(vec![-1.0, 0.0, 0.0])
        );
        let fast = f
            .dataset("entry/instrument/detector/module/fast_pixel_direction")
            .unwrap();
        assert_eq!(
            fast.attrs()
                .unwrap()
                .get("vector")
                .and_then(|v| v.to_f64s()),
            Some(vec![-1.0, 0.0, 0.0])
        );
        let o = f
            .dataset("entry/instrument/detector/transformations/detector_origin")
            .unwrap();
        let (len, u) = (
            o.read_f64().unwrap()[0],
            o.attrs()
                .unwrap()
                .get("vector")
                .and_then(|v| v.to_f64s())
                .unwrap(),
        );
        // nanoBragg (0.1, 0.02, -0.03) m -> McStas (30, 20, 100) mm
        let want = [30.0, 20.0, 100.0];
        for k in 0..3 {
            assert!((len * u[k] - want[k]).abs() < 1e-12, "{k}: {}", len * u[k]);
        }
        let mask = f.dataset("entry/instrument/detector/pixel_mask").unwrap();
        assert_eq!(mask.read::<u32>().unwrap(), vec![0, 0, 1, 0, 0, 1]);
        let wl = f
            .dataset("entry/instrument/beam/incident_wavelength")
            .unwrap();
        assert_eq!(wl.read_f64().unwrap(), vec![0.98]);
    }

    #[test]
    fn stills_and_per_frame_wavelengths() {
        let g = geometry();
        let (a, b) = ([1, 2, 3, 4, 5, 6], [7, 8, 9, 10, 11, 12]);
        let frames = NxFrames {
            still: true,
            wavelengths: Some(vec![0.9, 1.1]),
            ..Default::default()
        };
        let f = File::from_bytes(write_nxmx_frames(&g, &[&a, &b], &frames).unwrap()).unwrap();
        assert!(f.dataset("entry/sample/depends_on").is_err());
        let wl = f
            .dataset("entry/instrument/beam/incident_wavelength")
            .unwrap();
        assert_eq!(wl.shape().unwrap(), vec![2]);
        assert_eq!(wl.read_f64().unwrap(), vec![0.9, 1.1]);
        // the default: a sweep, one wavelength
        let f = File::from_bytes(write_nxmx(&g, &[&a, &b]).unwrap()).unwrap();
        assert!(f.dataset("entry/sample/depends_on").is_ok());
        let bad = |l: Vec<f64>| {
            let frames = NxFrames {
                still: false,
                wavelengths: Some(l),
                ..Default::default()
            };
            write_nxmx_frames(&g, &[&a, &b], &frames)
                .unwrap_err()
                .message
        };
        assert_eq!(bad(vec![1.0]), "NeXus writer: 1 wavelengths for 2 frames");
        assert_eq!(
            bad(vec![1.0, f64::NAN]),
            "NeXus writer: the wavelength of frame 1 is NaN, not a positive number"
        );
    }

    /// Deterministic counts like a noisy detector's (a splitmix64 hash of the seed and the pixel:
    /// mostly 0–3 photons, a few bright pixels, gaps of -1), `frames` images of `w`×`h`.
    fn noisy_frames(frames: usize, w: usize, h: usize, seed: u64) -> Vec<Vec<i32>> {
        let mix = |mut z: u64| {
            z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        (0..frames)
            .map(|k| {
                (0..w * h)
                    .map(|i| {
                        let r = mix(seed ^ ((k as u64) << 40) ^ i as u64);
                        if i % w == w / 2 {
                            -1
                        } else if r % 997 == 0 {
                            (r >> 20) as i32 & 0xffff
                        } else {
                            (r.count_ones() as i32 - 29).max(0)
                        }
                    })
                    .collect()
            })
            .collect()
    }

    fn big_geometry(w: usize, h: usize) -> NxGeometry {
        let mut g = geometry();
        g.image_size = (w, h);
        g.panels[0].fast_pixels = w;
        g.panels[0].slow_pixels = h;
        g.mask = Some((0..w * h).map(|i| (i % w != w / 2) as u8).collect());
        g
    }

    /// FNV-1a (64 bits): a fingerprint of a whole file.
    fn fnv1a(bytes: &[u8]) -> u64 {
        bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
            (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
        })
    }

    /// The file of `frames` written with `compression` on a pool of `threads`.
    fn write_on(
        threads: usize,
        g: &NxGeometry,
        frames: &[Vec<i32>],
        compression: NxCompression,
    ) -> Vec<u8> {
        let refs: Vec<&[i32]> = frames.iter().map(|f| f.as_slice()).collect();
        let opts = NxFrames {
            compression,
            ..Default::default()
        };
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| write_nxmx_frames(g, &refs, &opts))
            .unwrap()
    }

    #[test]
    fn bytes_do_not_depend_on_the_threads() {
        let (w, h) = (517, 263);
        let g = big_geometry(w, h);
        let frames = noisy_frames(5, w, h, 7);
        let one = write_on(1, &g, &frames, NxCompression::Deflate);
        // the file hdf5-pure 0.47.0 wrote before its chunks were compressed in parallel (one
        // thread compressing chunk after chunk), recorded from that build
        assert_eq!(
            (one.len(), fnv1a(&one)),
            (360_257, 0xd445_9dbb_60f6_dbed),
            "not the serial writer's bytes"
        );
        for threads in [2, 3, 8] {
            assert!(
                write_on(threads, &g, &frames, NxCompression::Deflate) == one,
                "{threads} threads"
            );
        }
        let f = File::from_bytes(one).unwrap();
        let d = f.dataset("entry/data/data").unwrap();
        assert_eq!(d.shape().unwrap(), vec![5, h as u64, w as u64]);
        assert_eq!(d.read::<i32>().unwrap(), frames.concat());
    }

    #[test]
    fn bslz4_frames_are_bitshuffle_lz4_chunks_of_the_counts() {
        // 517 x 263 = 135,971 pixels: 66 blocks of 2048, a last block of 800, 3 left over
        let (w, h) = (517, 263);
        let g = big_geometry(w, h);
        let frames = noisy_frames(3, w, h, 5);
        let one = write_on(1, &g, &frames, NxCompression::BitshuffleLz4);
        for threads in [2, 3] {
            assert!(
                write_on(threads, &g, &frames, NxCompression::BitshuffleLz4) == one,
                "{threads} threads"
            );
        }
        let f = File::from_bytes(one.clone()).unwrap();
        let d = f.dataset("entry/data/data").unwrap();
        assert_eq!(d.shape().unwrap(), vec![3, h as u64, w as u64]);
        assert_eq!(d.chunk_shape().unwrap(), Some(vec![1, h as u64, w as u64]));
        let p = d.filter_pipeline();
        assert_eq!(p.len(), 1);
        assert_eq!((p[0].id, p[0].is_optional), (32008, false));
        assert_eq!(p[0].client_data, vec![0, 2, 4, 0, 2]);
        // every chunk decodes (the reader's decoder) to its frame
        let mut chunks = d.chunks().unwrap();
        chunks.sort_by_key(|c| c.offset.clone());
        assert_eq!(chunks.len(), 3);
        for (k, c) in chunks.iter().enumerate() {
            assert_eq!(c.offset, vec![k as u64, 0, 0]);
            let at = c.address as usize;
            let stored = &one[at..at + c.storage_size as usize];
            let raw =
                crate::io::bitshuffle::bitshuffle_decode(stored, &p[0].client_data, 4, w * h * 4)
                    .unwrap();
            let counts: Vec<i32> = raw
                .chunks_exact(4)
                .map(|b| i32::from_le_bytes(b.try_into().unwrap()))
                .collect();
            assert!(counts == frames[k], "frame {k}");
        }
        // and the crate's measured-image reader reads frame 0 back
        let (n, rw, rh, px, _) = crate::io::h5image::read_nexus("bs.nxs", &one, &[]).unwrap();
        assert_eq!((n, rw, rh), (3, w, h));
        match px {
            crate::io::measured::Pixels::I32(v) => assert!(v == frames[0]),
            _ => panic!("not int32"),
        }
        // the rest of the file is the deflate file's (the same tree and geometry)
        let d = File::from_bytes(write_on(1, &g, &frames, NxCompression::Deflate)).unwrap();
        let mask = "entry/instrument/detector/pixel_mask";
        assert_eq!(
            f.dataset(mask).unwrap().read::<u32>().unwrap(),
            d.dataset(mask).unwrap().read::<u32>().unwrap()
        );
        let phi = "entry/sample/transformations/phi";
        assert_eq!(
            f.dataset(phi).unwrap().read_f64().unwrap(),
            d.dataset(phi).unwrap().read_f64().unwrap()
        );
    }

    #[test]
    fn compression_names() {
        for c in [NxCompression::Deflate, NxCompression::BitshuffleLz4] {
            assert_eq!(NxCompression::from_name(c.name()), Some(c));
            assert!(NxCompression::NAMES.contains(&c.name()));
        }
        assert_eq!(NxCompression::from_name("gzip"), None);
        assert_eq!(NxCompression::default(), NxCompression::Deflate);
    }

    /// The writer on a 12-frame EIGER2 4M series, on 1 thread and on all of rayon's (run with
    /// `cargo test --release -p nanobragg --lib nxmx_writer_bench -- --ignored --nocapture`;
    /// `NXMX_BENCH_ROUNDS`, default 3).
    #[test]
    #[ignore]
    fn nxmx_writer_bench() {
        let (w, h) = (2068, 2162);
        let g = big_geometry(w, h);
        let frames = noisy_frames(12, w, h, 11);
        let rounds = std::env::var("NXMX_BENCH_ROUNDS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(3);
        let all = rayon::current_num_threads();
        for round in 0..rounds {
            for threads in [1, all] {
                let t = std::time::Instant::now();
                let bytes = write_on(threads, &g, &frames, NxCompression::Deflate);
                println!(
                    "round {round} threads {threads}: {:.3} s, {} bytes, fnv1a {:#018x}",
                    t.elapsed().as_secs_f64(),
                    bytes.len(),
                    fnv1a(&bytes)
                );
            }
        }
    }

    #[test]
    fn bad_input_is_an_error() {
        let g = geometry();
        let e = write_nxmx(&g, &[]).unwrap_err();
        assert_eq!(e.message, "NeXus writer: no image to write");
        let e = write_nxmx(&g, &[&[1, 2, 3]]).unwrap_err();
        assert_eq!(e.message, "NeXus writer: image 0 holds 3 pixels, not 3x2");
    }
}
