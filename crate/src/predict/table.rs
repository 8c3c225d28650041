//! The `-predict` file of the CLI: a text table, one line per reflection on the detector.

use super::Prediction;

/// Column names and units of the `-predict` table (one `#` header line).
pub const TABLE_HEADER: &str =
    "# h k l fast[px] slow[px] d[A] twotheta[deg] excitation_error[1/A] F \
     intensity[photons/pixel] in_condition partiality phi[deg] rx[1/A] ry[1/A] rz[1/A]";

/// The `-predict` file: the header line, then one line per reflection that lands on the
/// detector (pixel centres at index + 0.5).
pub fn table(pred: &Prediction) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(64 + pred.reflections.len() * 140);
    out.push_str(TABLE_HEADER);
    out.push('\n');
    for r in pred.reflections.iter().filter(|r| r.on_detector) {
        let (Some(f), Some(s)) = (r.fast, r.slow) else {
            continue;
        };
        let _ = writeln!(
            out,
            "{} {} {} {:.3} {:.3} {:.5} {:.5} {:.6e} {} {:.6e} {} {:.6} {:.5} {:.7} {:.7} {:.7}",
            r.h,
            r.k,
            r.l,
            f,
            s,
            r.d,
            r.two_theta,
            r.excitation_error,
            r.f,
            r.intensity,
            r.in_condition as u8,
            r.partiality,
            r.phi,
            r.r[0],
            r.r[1],
            r.r[2]
        );
    }
    out
}
