//! NeXus/HDF5 images in: an EIGER master file (its `/entry/data/data_NNNNNN` external links to
//! the data files given with it), or a file holding `/entry/data/data` itself (the crate's own
//! NXmx output, a single-file NeXus). Frame 0 of the first data set is read; its chunks may be
//! bitshuffle-LZ4 (`io::bitshuffle`), LZ4, or deflate/shuffle (decoded by `hdf5-pure`). The
//! geometry comes from the NXmx detector and beam fields, in the units their `units` attribute
//! names (`io::measured::MeasuredGeometry`); what a file does not say is listed in its notes.
//!
//! `hdf5-pure` reads groups, datasets and attributes, but passes over external links without
//! telling their targets: `external_links` finds the link messages (the same bytes in compact
//! and dense link storage) in the master file's bytes.

use crate::error::{Error, Result};
use crate::io::bitshuffle::{self, FILTER_BITSHUFFLE, FILTER_LZ4};
use crate::io::measured::{MeasuredGeometry, Pixels};
use crate::limits::{over, MAX_MEASURED_PIXELS};
use hdf5_pure::{AttrValue, DType, Dataset, File};

/// An HDF5 file's signature.
pub fn is_hdf5(bytes: &[u8]) -> bool {
    bytes.starts_with(b"\x89HDF\r\n\x1a\n")
}

/// One external link: its name in its group, the file it points to and the object path there.
#[derive(Clone, Debug, PartialEq)]
pub struct ExternalLink {
    pub name: String,
    pub file: String,
    pub path: String,
}

fn printable(b: &[u8]) -> bool {
    !b.is_empty() && b.iter().all(|&c| (0x20..0x7f).contains(&c))
}

/// The external links whose messages are in `bytes` (HDF5 link message, version 1: flags,
/// link type 64, name length, name, then the link value's u16 length, a flags byte and the
/// NUL-terminated file name and object path), in file order, each name once.
pub fn external_links(bytes: &[u8]) -> Vec<ExternalLink> {
    let mut out: Vec<ExternalLink> = Vec::new();
    let mut i = 3;
    while i + 3 < bytes.len() {
        // a candidate link value: u16 length L at i, then L bytes starting with flags 0
        let len = u16::from_le_bytes([bytes[i], bytes[i + 1]]) as usize;
        if len >= 5 && bytes[i + 2] == 0 && i + 2 + len <= bytes.len() {
            let blob = &bytes[i + 3..i + 2 + len];
            let mut parts = blob.split(|&c| c == 0);
            if let (Some(file), Some(path), Some(end)) = (parts.next(), parts.next(), parts.next())
            {
                if printable(file) && printable(path) && path[0] == b'/' && end.is_empty() {
                    // the link name just before: a one-byte length n, then n printable bytes
                    let name = (1..=i.min(255)).find_map(|n| {
                        let start = i.checked_sub(n + 1)?;
                        (bytes[start] as usize == n && printable(&bytes[start + 1..i]))
                            .then(|| String::from_utf8_lossy(&bytes[start + 1..i]).into_owned())
                    });
                    if let Some(name) = name {
                        if !out.iter().any(|l| l.name == name) {
                            out.push(ExternalLink {
                                name,
                                file: String::from_utf8_lossy(file).into_owned(),
                                path: String::from_utf8_lossy(path).into_owned(),
                            });
                        }
                        i += 2 + len;
                        continue;
                    }
                }
            }
        }
        i += 1;
    }
    out
}

fn h5err(name: &str, what: &str, e: impl std::fmt::Display) -> Error {
    Error::input(format!("{name}: {what}: {e}")).at_file(name)
}

fn base_name(path: &str) -> &str {
    path.rsplit(['/', '\\']).next().unwrap_or(path)
}

/// The first value of `path` (NaN and infinities kept, for the checks to name) and its `units`
/// attribute; `None` when absent or not numeric.
fn raw(f: &File, path: &str) -> Option<(f64, Option<String>)> {
    let ds = f.dataset(path).ok()?;
    let v = *ds.read_f64().ok()?.first()?;
    // every string form: h5py writes a `str` attribute as a variable-length string
    let units = ds.attrs().ok().and_then(|a| match a.get("units")? {
        AttrValue::String(s)
        | AttrValue::AsciiString(s)
        | AttrValue::VarLenString(s)
        | AttrValue::VarLenAsciiString(s) => Some(s.trim().to_string()),
        AttrValue::StringSized { value, .. } | AttrValue::AsciiStringSized { value, .. } => {
            Some(value.trim().to_string())
        }
        _ => None,
    });
    Some((v, units))
}

/// A scalar number from `path` in the unit `scale` maps its `units` attribute to (`""` when it
/// has none); `None` when absent, not numeric or in a unit `scale` does not know.
fn number(f: &File, path: &str, scale: &dyn Fn(&str) -> Option<f64>) -> Option<f64> {
    let (v, units) = raw(f, path)?;
    Some(v * scale(units.as_deref().unwrap_or(""))?)
}

/// A beam centre coordinate in pixels: NXmx gives it in pixels or as a length (then divided
/// by that axis' pixel size, mm).
fn beam_pixels(f: &File, path: &str, pixel_mm: Option<f64>) -> Option<f64> {
    let (v, units) = raw(f, path)?;
    match units.as_deref().unwrap_or("") {
        "" | "pixel" | "pixels" => Some(v),
        u => Some(v * to_mm(u)? / pixel_mm?),
    }
}

/// Length units → mm (`""`: the NXmx default, metres).
fn to_mm(u: &str) -> Option<f64> {
    match u {
        "" | "m" | "meter" | "meters" | "metre" => Some(1000.0),
        "mm" | "millimeter" | "millimeters" => Some(1.0),
        "um" | "µm" | "micron" | "microns" => Some(1e-3),
        "cm" => Some(10.0),
        _ => None,
    }
}

/// Wavelength units → Å (`""`: Å, as EIGER files write it).
fn to_angstrom(u: &str) -> Option<f64> {
    match u {
        "" | "A" | "angstrom" | "Angstrom" | "Å" => Some(1.0),
        "nm" => Some(10.0),
        "m" => Some(1e10),
        _ => None,
    }
}

fn plain(_: &str) -> Option<f64> {
    Some(1.0)
}

fn text(f: &File, path: &str) -> Option<String> {
    let ds = f.dataset(path).ok()?;
    ds.read_string()
        .ok()?
        .into_iter()
        .next()
        .map(|s| s.trim().to_string())
}

/// The geometry an NXmx file states (EIGER's fields: pixel sizes, distance, beam centre in
/// pixels, wavelength, sensor, saturation; the first ω or φ and its step).
fn geometry(f: &File) -> MeasuredGeometry {
    let d = "entry/instrument/detector";
    let mut g = MeasuredGeometry {
        pixel_mm: number(f, &format!("{d}/x_pixel_size"), &to_mm),
        ..Default::default()
    };
    let py = number(f, &format!("{d}/y_pixel_size"), &to_mm);
    if let (Some(x), Some(y)) = (g.pixel_mm, py) {
        if (x - y).abs() > 1e-9 * x.abs() {
            g.notes.push(format!(
                "pixels are {x} × {y} mm; the simulation's pixels are square ({x} mm)"
            ));
        }
    }
    g.distance_mm = number(f, &format!("{d}/detector_distance"), &to_mm)
        .or_else(|| number(f, &format!("{d}/transformations/translation"), &to_mm));
    let bx = beam_pixels(f, &format!("{d}/beam_center_x"), g.pixel_mm);
    let by = beam_pixels(f, &format!("{d}/beam_center_y"), py.or(g.pixel_mm));
    g.beam_px = bx.zip(by);
    g.wavelength_a = number(f, "entry/instrument/beam/incident_wavelength", &to_angstrom)
        .or_else(|| number(f, "entry/instrument/monochromator/wavelength", &to_angstrom));
    let finite = |x: &f64| x.is_finite();
    g.exposure_s = number(f, &format!("{d}/count_time"), &plain).filter(finite);
    g.saturation = number(f, &format!("{d}/saturation_value"), &plain)
        .or_else(|| {
            number(
                f,
                &format!("{d}/detectorSpecific/countrate_correction_count_cutoff"),
                &plain,
            )
        })
        .filter(finite);
    g.sensor_material = text(f, &format!("{d}/sensor_material"));
    g.sensor_thickness_mm = number(f, &format!("{d}/sensor_thickness"), &to_mm).filter(finite);
    for axis in ["omega", "phi"] {
        for base in ["entry/sample/goniometer", "entry/sample/transformations"] {
            if g.phi_deg.is_some() {
                break;
            }
            if let Some(first) = f
                .dataset(&format!("{base}/{axis}"))
                .ok()
                .and_then(|ds| ds.read_f64().ok())
                .and_then(|v| v.first().copied())
            {
                g.phi_deg = Some(first);
                g.osc_deg = number(f, &format!("{base}/{axis}_range_average"), &plain)
                    .or_else(|| number(f, &format!("{base}/{axis}_increment_set"), &plain));
            }
        }
    }
    g
}

/// Frame 0 of `ds` (shape `[frames, h, w]` or `[h, w]`).
fn read_frame(name: &str, f: &File, ds: &Dataset) -> Result<(usize, usize, usize, Pixels)> {
    let e = |what: &str, x: &dyn std::fmt::Display| h5err(name, what, x);
    let shape = ds.shape().map_err(|x| e("the image data set", &x))?;
    let (frames, h, w) = match shape[..] {
        [n, h, w] => (n, h, w),
        [h, w] => (1, h, w),
        _ => {
            return Err(e(
                "the image data set",
                &format!("shape {shape:?}: 2 or 3 dimensions expected"),
            ))
        }
    };
    if frames == 0 || h == 0 || w == 0 {
        return Err(e(
            "the image data set",
            &format!("shape {shape:?} holds no image"),
        ));
    }
    if h.checked_mul(w)
        .is_none_or(|n| n > MAX_MEASURED_PIXELS as u64)
    {
        return Err(over(format!(
            "{name}: the image data set: frames of {w}x{h} pixels, more than this build reads \
             (at most {MAX_MEASURED_PIXELS})"
        ))
        .at_file(name));
    }
    let (frames, h, w) = (
        usize::try_from(frames).unwrap_or(usize::MAX),
        h as usize,
        w as usize,
    );
    let dtype = ds.dtype().map_err(|x| e("the image data set", &x))?;
    let elem = match dtype {
        DType::U8 => 1,
        DType::U16 | DType::I16 => 2,
        DType::U32 | DType::I32 | DType::F32 => 4,
        ref t => {
            return Err(e(
                "the image data set",
                &format!("type {t} is not read (u8, u16, u32, i16, i32, f32 are)"),
            ))
        }
    };
    let pipeline = ds.filter_pipeline();
    let own = pipeline
        .iter()
        .any(|p| p.id == FILTER_BITSHUFFLE || p.id == FILTER_LZ4);
    let rows = if shape.len() == 3 { 1 } else { h as u64 };
    // chunks' sizes and offsets checked before any is decoded, whoever decodes them
    let chunked = match ds.chunk_shape() {
        Ok(Some(cshape)) => {
            let bytes = chunk_bytes(name, &shape, &cshape, elem)?;
            let chunks = ds.chunks();
            if let Ok(chunks) = &chunks {
                check_offsets(name, &shape, &cshape, chunks)?;
            }
            Some((cshape, bytes, chunks))
        }
        _ => None,
    };
    let px = if !own {
        let r = |x: hdf5_pure::Error| e("reading the image data set", &x);
        match dtype {
            DType::U8 => Pixels::U8(ds.read_u8_rows(0, rows).map_err(r)?),
            DType::U16 => Pixels::U16(ds.read_u16_rows(0, rows).map_err(r)?),
            DType::U32 => Pixels::U32(ds.read_u32_rows(0, rows).map_err(r)?),
            DType::I16 => Pixels::I16(ds.read_i16_rows(0, rows).map_err(r)?),
            DType::I32 => Pixels::I32(ds.read_i32_rows(0, rows).map_err(r)?),
            _ => Pixels::F32(ds.read_f32_rows(0, rows).map_err(r)?),
        }
    } else {
        let Some((cshape, chunk_bytes, chunks)) = chunked else {
            return Err(e(
                "the image data set",
                &"bitshuffle/LZ4 filter on unchunked data",
            ));
        };
        let chunks = chunks.map_err(|x| e("the image chunk index", &x))?;
        let raw = own_chunks(
            name,
            f,
            &chunks,
            &pipeline,
            elem,
            &cshape,
            chunk_bytes,
            &shape,
            h,
            w,
        )?;
        Pixels::from_le(&dtype, &raw)
    };
    if px.len() != w * h {
        return Err(e(
            "the image data set",
            &format!("{} values read for a {w}×{h} frame", px.len()),
        ));
    }
    Ok((frames, w, h, px))
}

/// Every chunk of the index starts inside the data, on a chunk boundary (HDF5's "bad coordinate
/// offset" otherwise), so that placing its values cannot go out of bounds.
fn check_offsets(
    name: &str,
    shape: &[u64],
    cshape: &[u64],
    chunks: &[hdf5_pure::Chunk],
) -> Result<()> {
    for c in chunks {
        let inside = c.offset.len() == shape.len()
            && cshape.len() == shape.len()
            && (0..shape.len())
                .all(|i| c.offset[i] < shape[i] && cshape[i] > 0 && c.offset[i] % cshape[i] == 0);
        if !inside {
            return Err(h5err(
                name,
                "the image chunk index",
                format_args!(
                    "a chunk at {:?}: bad coordinate offset for data of shape {shape:?} in chunks of {cshape:?}",
                    c.offset
                ),
            ));
        }
    }
    Ok(())
}

/// The decoded size of one chunk of shape `cshape` (`elem`-byte values), within the limit.
fn chunk_bytes(name: &str, shape: &[u64], cshape: &[u64], elem: usize) -> Result<usize> {
    if cshape.len() != shape.len() {
        return Err(h5err(
            name,
            "the image data set",
            format_args!("chunks of shape {cshape:?} for data of shape {shape:?}"),
        ));
    }
    cshape
        .iter()
        .try_fold(elem as u64, |a, &b| a.checked_mul(b))
        .filter(|&b| b > 0 && b <= 4 * MAX_MEASURED_PIXELS as u64)
        .map(|b| b as usize)
        .ok_or_else(|| {
            over(format!(
                "{name}: the image data set: chunks of shape {cshape:?} ({elem}-byte values) are \
                 larger than this build reads (at most {} bytes)",
                4 * MAX_MEASURED_PIXELS
            ))
            .at_file(name)
        })
}

/// The last three of `c`'s values (frames, rows, columns), 1 for frames of a 2-D shape.
fn dims(c: &[u64]) -> (u64, u64, u64) {
    let n = c.len();
    let frames = if n >= 3 { c[n - 3] } else { 1 };
    (frames, c[n.saturating_sub(2)], c[n - 1])
}

/// Frame 0 assembled from its chunks (checked by [`chunk_bytes`] and [`check_offsets`]), each
/// decoded here (filters hdf5-pure has no decoder for).
#[allow(clippy::too_many_arguments)]
fn own_chunks(
    name: &str,
    f: &File,
    chunks: &[hdf5_pure::Chunk],
    pipeline: &[hdf5_pure::Filter],
    elem: usize,
    cshape: &[u64],
    chunk_bytes: usize,
    shape: &[u64],
    h: usize,
    w: usize,
) -> Result<Vec<u8>> {
    let e = |what: &str, x: &dyn std::fmt::Display| h5err(name, what, x);
    let (_, ch, cw) = dims(cshape);
    let (ch, cw) = (ch as usize, cw as usize);
    let bytes = f.as_bytes();
    let mut out = vec![0u8; w * h * elem];
    for c in chunks
        .iter()
        .filter(|c| shape.len() == 2 || c.offset.first() == Some(&0))
    {
        let (_, oy, ox) = dims(&c.offset);
        let (oy, ox) = (oy as usize, ox as usize);
        let at = c.address;
        let mut data = usize::try_from(at)
            .ok()
            .zip(usize::try_from(c.storage_size).ok())
            .and_then(|(a, n)| bytes.get(a..a.checked_add(n)?))
            .ok_or_else(|| {
                e(
                    &format!("the chunk at ({oy}, {ox})"),
                    &format!(
                        "{} bytes at byte {at} lie past the end of the file",
                        c.storage_size
                    ),
                )
            })?
            .to_vec();
        for (k, flt) in pipeline.iter().enumerate().rev() {
            if c.filter_mask >> k & 1 != 0 {
                continue;
            }
            data = match flt.id {
                FILTER_BITSHUFFLE => {
                    bitshuffle::bitshuffle_decode(&data, &flt.client_data, elem, chunk_bytes)
                }
                FILTER_LZ4 => bitshuffle::lz4_filter_decode(&data, chunk_bytes),
                id => Err(format!(
                    "filter {id} together with bitshuffle/LZ4 is not supported"
                )),
            }
            .map_err(|m| e(&format!("the chunk at ({oy}, {ox})"), &m))?;
        }
        if data.len() != chunk_bytes {
            return Err(e(
                &format!("the chunk at ({oy}, {ox})"),
                &format!(
                    "{} bytes decoded, {chunk_bytes} expected (chunks of {cshape:?})",
                    data.len()
                ),
            ));
        }
        // frame 0 of the chunk, clipped to the image
        for y in 0..ch.min(h.saturating_sub(oy)) {
            let n = cw.min(w.saturating_sub(ox)) * elem;
            let src = &data[y * cw * elem..y * cw * elem + n];
            let dst = ((oy + y) * w + ox) * elem;
            out[dst..dst + n].copy_from_slice(src);
        }
    }
    Ok(out)
}

/// Reads frame 0 of a NeXus/HDF5 image with its geometry. `others` are the files given with
/// it (by name; an EIGER master's data files are found by their base name).
pub fn read_nexus(
    name: &str,
    bytes: &[u8],
    others: &[(&str, &[u8])],
) -> Result<(usize, usize, usize, Pixels, MeasuredGeometry)> {
    let open = |n: &str, b: &[u8]| {
        File::from_bytes(b.to_vec()).map_err(|x| h5err(n, "not a readable HDF5 file", x))
    };
    let f = open(name, bytes)?;
    let mut g = geometry(&f).checked(
        name,
        [
            "entry/instrument/detector/x_pixel_size",
            "entry/instrument/detector/detector_distance",
            "entry/instrument/beam/incident_wavelength",
            "entry/sample/goniometer/omega",
            "entry/sample/goniometer/omega_range_average",
            "entry/instrument/detector/beam_center_x/y",
        ],
    )?;
    let direct = ["entry/data/data", "entry/instrument/detector/data"]
        .iter()
        .find_map(|p| f.dataset(p).ok());
    let (frames, w, h, px) = match direct {
        Some(ds) => read_frame(name, &f, &ds)?,
        None => {
            let mut links: Vec<ExternalLink> = external_links(bytes)
                .into_iter()
                .filter(|l| l.name.starts_with("data"))
                .collect();
            links.sort_by(|a, b| a.name.cmp(&b.name));
            let Some(first) = links.first() else {
                return Err(Error::input(format!(
                    "{name}: no image: neither /entry/data/data nor an external link /entry/data/data_NNNNNN to a data file"
                ))
                .at_file(name));
            };
            let want = base_name(&first.file);
            let Some((dn, db)) = others.iter().find(|(n, _)| base_name(n) == want) else {
                return Err(Error::input(format!(
                    "{name}: /entry/data/{} links to the data file {want}, which was not given: open it together with the master file",
                    first.name
                ))
                .at_file(name));
            };
            let df = open(dn, db)?;
            let ds = df
                .dataset(first.path.trim_start_matches('/'))
                .map_err(|x| {
                    h5err(
                        dn,
                        &format!("no data set {} (linked from {name})", first.path),
                        x,
                    )
                })?;
            let (n, w, h, px) = read_frame(dn, &df, &ds)?;
            if links.len() > 1 {
                g.notes.push(format!(
                    "frame 0 of {} data files ({} in {want})",
                    links.len(),
                    n
                ));
            }
            (n, w, h, px)
        }
    };
    Ok((frames, w, h, px, g))
}
