//! X-ray form factors of neutral atoms, International Tables for Crystallography Vol. C
//! (1992 and later), Table 6.1.1.4: f(s) = Σᵢ aᵢ exp(−bᵢ s²) + c with s = sin θ / λ (Å⁻¹),
//! four Gaussians and a constant ("IT92", as in CCP4's atomsf.lib, cctbx's "it1992" and gemmi).
//!
//! The data (`it92.tsv`, H to Cf and D) is transcribed by `scripts/sf_tables.py` from gemmi's
//! copy of the table. Charges are ignored (neutral-atom factors), as gemmi does by default.

use std::sync::OnceLock;

const TABLE: &str = include_str!("it92.tsv");

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Coef {
    pub a: [f64; 4],
    pub b: [f64; 4],
    pub c: f64,
}

impl Coef {
    /// f at s² = (sin θ / λ)² (Å⁻²).
    #[inline]
    pub fn at(&self, stol2: f64) -> f64 {
        self.c
            + self.a[0] * (-self.b[0] * stol2).exp()
            + self.a[1] * (-self.b[1] * stol2).exp()
            + self.a[2] * (-self.b[2] * stol2).exp()
            + self.a[3] * (-self.b[3] * stol2).exp()
    }
}

/// The elements of the table, in table order (atomic number order, then D).
pub struct Table {
    pub symbols: Vec<&'static str>,
    pub coefs: Vec<Coef>,
}

pub fn table() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    T.get_or_init(|| {
        let mut symbols = Vec::new();
        let mut coefs = Vec::new();
        for line in TABLE.lines().filter(|l| !l.starts_with('#')) {
            let mut it = line.split_whitespace();
            let (Some(sym), v) = (it.next(), it.filter_map(|x| x.parse::<f64>().ok())) else {
                continue;
            };
            let v: Vec<f64> = v.collect();
            if v.len() == 9 {
                symbols.push(sym);
                coefs.push(Coef {
                    a: [v[0], v[1], v[2], v[3]],
                    b: [v[4], v[5], v[6], v[7]],
                    c: v[8],
                });
            }
        }
        Table { symbols, coefs }
    })
}

/// Index of an element symbol in [`table`] (any case: "FE", "Fe"), or `None`.
pub fn element_index(symbol: &str) -> Option<usize> {
    let s = symbol.trim();
    table()
        .symbols
        .iter()
        .position(|t| t.eq_ignore_ascii_case(s))
}

/// [`element_index`] for atom `atom` of a model file, or the message "atom "CA": unknown
/// element "Xx" …" for the reader to place at its file and line.
pub fn atom_element(symbol: &str, atom: &str) -> Result<usize, String> {
    element_index(symbol).ok_or_else(|| {
        format!("atom \"{atom}\": unknown element \"{symbol}\" (no X-ray form factor for it)")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_complete() {
        let t = table();
        assert_eq!(t.symbols.len(), 99);
        assert_eq!(t.symbols[0], "H");
        assert_eq!(t.symbols[97], "Cf");
        assert_eq!(t.symbols[98], "D");
        assert_eq!(t.coefs[98], t.coefs[0], "D scatters as H");
        assert_eq!(element_index("FE"), Some(25));
        assert_eq!(element_index("Xx"), None);
        // f(0) = a1+a2+a3+a4+c is close to the number of electrons
        for (z, c) in t.coefs.iter().take(98).enumerate() {
            let f0 = c.at(0.0);
            assert!(
                (f0 - (z + 1) as f64).abs() < 0.1,
                "{} f0={f0}",
                t.symbols[z]
            );
        }
        // carbon at sin θ/λ = 0.5 Å⁻¹, as gemmi's IT92 evaluates it: 1.68576
        let c = t.coefs[element_index("C").unwrap()];
        assert!((c.at(0.25) - 1.68576).abs() < 1e-4, "{}", c.at(0.25));
    }
}
