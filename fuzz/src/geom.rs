//! The `geom` target.

use super::*;

/// A CrystFEL `.geom` (`-geom`): the reader (its panels and mask), then through `api::prepare`
/// as the CLI takes it, and a render when it is small.
pub fn geom(data: &[u8]) {
    if let Ok(g) = io::geom::parse_geom("fuzz.geom", data) {
        let panels = g.lab_panels();
        let (f, s) = panels.iter().fold((0, 0), |(f, s), p| {
            (
                f.max(p.data_origin[0] + p.size[0]),
                s.max(p.data_origin[1] + p.size[1]),
            )
        });
        if f * s <= RENDER_PIXELS {
            if let Some(m) = g.mask(f, s) {
                assert_eq!(m.len(), f * s, "mask size");
            }
        }
    }
    geometry_file("-geom", "fuzz.geom", data);
}
