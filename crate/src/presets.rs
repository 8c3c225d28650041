//! Presets of real detectors (`-detector NAME`): pixel counts, pixel size, module layout (the
//! gaps between modules become the plan's mask: no photons are rendered there and a miniCBF marks
//! them -1, as PILATUS and EIGER files do), the largest trusted count and the sensor.
//!
//! The list is data, serialisable (serde) so that a front end can offer it as it is.
//!
//! Sources:
//! * pixel counts, pixel sizes, module sizes and gaps: pyFAI's detector definitions
//!   (`pyFAI/detectors/_dectris.py`, `_rayonix.py`, MIT, ESRF), which agree with dxtbx's module
//!   tables (`dxtbx/format/FormatPilatusHelpers.py`: PILATUS 487 x 195 modules with 7/17-pixel
//!   gaps, EIGER2 1028 x 512 modules with 12/38-pixel gaps) and with the image sizes dxtbx
//!   recognises (PILATUS 6M 2463 x 2527, EIGER2 16M 4148 x 4362, EIGER2 4M 2068 x 2162);
//! * sensors: PILATUS 6M silicon 320 µm (the standard 6M sensor; 450 and 1000 µm exist), EIGER2 X
//!   silicon 450 µm (DECTRIS EIGER2 X; CdTe 750 µm is the EIGER2 CdTe variant), Rayonix CCDs a
//!   40 µm Gd2O2S phosphor on fibre-optic tapers (pyFAI), whose tiled CCDs give one image with no
//!   gaps;
//! * largest counts: PILATUS's 20-bit counters (2^20 - 1 = 1048575), EIGER2 images summed to 32
//!   bits (DECTRIS: "auto-summation extends the data depth up to 32 bits"; a signed 32-bit CBF
//!   holds up to 2^31 - 1), Rayonix 16-bit read-out (65535);
//! * Rayonix MX300: 8192 x 8192 pixels of 36.621 µm, read out 2x2 binned as 4096 x 4096 pixels of
//!   73.242 µm (pyFAI, from Rayonix), the usual setting for MX data.

use serde::Serialize;

/// A detector model.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DetectorPreset {
    /// The `-detector` name.
    pub name: &'static str,
    /// What a person calls it.
    pub label: &'static str,
    /// "PAD" (hybrid pixel array) or "CCD".
    pub kind: &'static str,
    pub fast_pixels: usize,
    pub slow_pixels: usize,
    /// Pixel size, mm.
    pub pixel_mm: f64,
    /// Module size in pixels (fast, slow); equal to the image size for one-piece detectors.
    pub module_fast: usize,
    pub module_slow: usize,
    /// Inactive pixels between modules (fast, slow).
    pub gap_fast: usize,
    pub gap_slow: usize,
    /// Largest trusted count (miniCBF `Count_cutoff`).
    pub saturation: u64,
    /// Sensor material as a miniCBF names it ("Silicon", "CCD") and its thickness (µm).
    pub sensor: &'static str,
    pub sensor_thickness_um: f64,
}

pub const PRESETS: &[DetectorPreset] = &[
    DetectorPreset {
        name: "pilatus6m",
        label: "DECTRIS PILATUS 6M",
        kind: "PAD",
        fast_pixels: 2463,
        slow_pixels: 2527,
        pixel_mm: 0.172,
        module_fast: 487,
        module_slow: 195,
        gap_fast: 7,
        gap_slow: 17,
        saturation: 1048575,
        sensor: "Silicon",
        sensor_thickness_um: 320.0,
    },
    DetectorPreset {
        name: "eiger2-16m",
        label: "DECTRIS EIGER2 X 16M",
        kind: "PAD",
        fast_pixels: 4148,
        slow_pixels: 4362,
        pixel_mm: 0.075,
        module_fast: 1028,
        module_slow: 512,
        gap_fast: 12,
        gap_slow: 38,
        saturation: 2147483647,
        sensor: "Silicon",
        sensor_thickness_um: 450.0,
    },
    DetectorPreset {
        name: "eiger2-4m",
        label: "DECTRIS EIGER2 X 4M",
        kind: "PAD",
        fast_pixels: 2068,
        slow_pixels: 2162,
        pixel_mm: 0.075,
        module_fast: 1028,
        module_slow: 512,
        gap_fast: 12,
        gap_slow: 38,
        saturation: 2147483647,
        sensor: "Silicon",
        sensor_thickness_um: 450.0,
    },
    DetectorPreset {
        name: "mx300",
        label: "Rayonix MX300 (CCD, 2x2 binned)",
        kind: "CCD",
        fast_pixels: 4096,
        slow_pixels: 4096,
        pixel_mm: 0.073242,
        module_fast: 4096,
        module_slow: 4096,
        gap_fast: 0,
        gap_slow: 0,
        saturation: 65535,
        sensor: "CCD",
        sensor_thickness_um: 40.0,
    },
];

/// Names compare without case, `-`, `_` or spaces ("Pilatus6M", "eiger2_16m").
fn canonical(s: &str) -> String {
    s.chars()
        .filter(|c| !matches!(c, '-' | '_' | ' '))
        .flat_map(|c| c.to_lowercase())
        .collect()
}

pub fn find(name: &str) -> Option<&'static DetectorPreset> {
    let want = canonical(name);
    PRESETS.iter().find(|p| canonical(p.name) == want)
}

/// `find`, or the message every `-detector` flag gives for an unknown name (the caller adds
/// the flag: each program has its own word reader).
pub fn lookup(name: &str) -> std::result::Result<&'static DetectorPreset, String> {
    find(name).ok_or_else(|| format!("unknown detector '{name}' (known: {})", names()))
}

/// The names, for error messages and help.
pub fn names() -> String {
    PRESETS
        .iter()
        .map(|p| p.name)
        .collect::<Vec<_>>()
        .join(", ")
}

impl DetectorPreset {
    /// True for a pixel in a gap between modules.
    pub fn is_gap(&self, f: usize, s: usize) -> bool {
        let in_gap = |i: usize, module: usize, gap: usize| gap > 0 && i % (module + gap) >= module;
        in_gap(f, self.module_fast, self.gap_fast) || in_gap(s, self.module_slow, self.gap_slow)
    }

    /// The plan's mask: 1 for active pixels, 0 in the gaps (fast index first).
    pub fn mask(&self) -> Vec<u8> {
        // one row of a module's pixels, copied (the modulo per pixel cost 50 ms on a 4M
        // detector, and a fit resolves its set-up at every step)
        let row: Vec<u8> = (0..self.fast_pixels)
            .map(|f| !self.is_gap(f, 0) as u8)
            .collect();
        let mut m = Vec::with_capacity(self.fast_pixels * self.slow_pixels);
        for s in 0..self.slow_pixels {
            if self.gap_row(s) {
                m.resize(m.len() + self.fast_pixels, 0);
            } else {
                m.extend_from_slice(&row);
            }
        }
        m
    }

    /// Whether slow row `s` lies in a gap between modules.
    fn gap_row(&self, s: usize) -> bool {
        self.gap_slow > 0 && s % (self.module_slow + self.gap_slow) >= self.module_slow
    }

    /// Number of gap pixels.
    pub fn gap_pixels(&self) -> usize {
        let gaps = |n: usize, module: usize, gap: usize| {
            if gap == 0 {
                0
            } else {
                (0..n).filter(|i| i % (module + gap) >= module).count()
            }
        };
        let gf = gaps(self.fast_pixels, self.module_fast, self.gap_fast);
        let gs = gaps(self.slow_pixels, self.module_slow, self.gap_slow);
        gf * self.slow_pixels + gs * self.fast_pixels - gf * gs
    }

    /// Modules across and down.
    pub fn modules(&self) -> (usize, usize) {
        (
            (self.fast_pixels + self.gap_fast) / (self.module_fast + self.gap_fast),
            (self.slow_pixels + self.gap_slow) / (self.module_slow + self.gap_slow),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_tile_exactly() {
        for p in PRESETS {
            let (nf, ns) = p.modules();
            assert_eq!(
                nf * p.module_fast + (nf - 1) * p.gap_fast,
                p.fast_pixels,
                "{}",
                p.name
            );
            assert_eq!(
                ns * p.module_slow + (ns - 1) * p.gap_slow,
                p.slow_pixels,
                "{}",
                p.name
            );
            let mask = p.mask();
            let zeros = mask.iter().filter(|&&v| v == 0).count();
            assert_eq!(zeros, p.gap_pixels(), "{}", p.name);
            assert_eq!(
                mask.len() - zeros,
                nf * ns * p.module_fast * p.module_slow,
                "{}",
                p.name
            );
        }
        let p = find("pilatus6m").unwrap();
        assert_eq!(p.modules(), (5, 12));
        assert!(!p.is_gap(486, 0) && p.is_gap(487, 0) && p.is_gap(493, 0) && !p.is_gap(494, 0));
        assert!(!p.is_gap(0, 194) && p.is_gap(0, 195) && p.is_gap(0, 211) && !p.is_gap(0, 212));
        assert_eq!(find("eiger2-16m").unwrap().modules(), (4, 8));
        assert_eq!(find("EIGER2_4M").unwrap().modules(), (2, 4));
        assert_eq!(find("Rayonix MX300"), None);
        assert_eq!(find("MX300").unwrap().gap_pixels(), 0);
        assert_eq!(names(), "pilatus6m, eiger2-16m, eiger2-4m, mx300");
    }
}
