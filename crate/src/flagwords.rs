//! A cursor over command-line words for the companion programs (`noisify`, `nonbragg`), whose
//! flag tables differ from nanoBragg's: values are read with the crate's strict number parsers
//! (`cfmt`) and every error names the flag it belongs to.

use crate::cfmt::{parse_f64_strict, parse_i64_strict};
use crate::error::{Error, Result};

pub struct FlagWords<'a> {
    words: &'a [String],
    pos: usize,
    flag: String,
}

impl<'a> FlagWords<'a> {
    pub fn new(words: &'a [String]) -> Self {
        FlagWords {
            words,
            pos: 0,
            flag: String::new(),
        }
    }

    /// The next word, which becomes the current flag for error messages.
    pub fn next_flag(&mut self) -> Option<String> {
        let w = self.words.get(self.pos)?.clone();
        self.pos += 1;
        self.flag = w.clone();
        Some(w)
    }

    pub fn flag(&self) -> &str {
        &self.flag
    }

    /// Words left after the cursor.
    pub fn remaining(&self) -> usize {
        self.words.len() - self.pos
    }

    /// A usage error about the current flag: `<flag>: <what>`.
    pub fn error(&self, what: impl std::fmt::Display) -> Error {
        Error::usage(format!("{}: {what}", self.flag)).with_flag(self.flag.as_str())
    }

    pub fn text(&mut self) -> Result<String> {
        match self.words.get(self.pos) {
            Some(s) => {
                self.pos += 1;
                Ok(s.clone())
            }
            None => Err(self.error("missing value")),
        }
    }

    /// A finite number.
    pub fn f64(&mut self) -> Result<f64> {
        let t = self.text()?;
        match parse_f64_strict(&t) {
            Some(v) if v.is_finite() => Ok(v),
            _ => Err(self.error(format_args!("expected a number, found '{t}'"))),
        }
    }

    /// A number that must be > 0.
    pub fn positive(&mut self) -> Result<f64> {
        let v = self.f64()?;
        if v > 0.0 {
            Ok(v)
        } else {
            Err(self.error(format_args!("must be positive, found {v}")))
        }
    }

    /// A number that must be >= 0.
    pub fn non_negative(&mut self) -> Result<f64> {
        let v = self.f64()?;
        if v >= 0.0 {
            Ok(v)
        } else {
            Err(self.error(format_args!("must not be negative, found {v}")))
        }
    }

    /// A number within `lo..=hi`.
    pub fn between(&mut self, lo: f64, hi: f64) -> Result<f64> {
        let v = self.f64()?;
        if (lo..=hi).contains(&v) {
            Ok(v)
        } else {
            let g = crate::cfmt::fmt_g;
            Err(self.error(format_args!(
                "must be a number from {} to {}, found {}",
                g(lo),
                g(hi),
                g(v)
            )))
        }
    }

    /// A random seed: an integer within a C `int` (upstream reads seeds with `atoi`), so that
    /// its negation, which upstream's generators take, cannot overflow.
    pub fn seed(&mut self) -> Result<i64> {
        let v = self.int()?;
        let m = i32::MAX as i64;
        if (-m..=m).contains(&v) {
            Ok(v)
        } else {
            Err(self.error(format_args!("must be a seed from -{m} to {m}, found {v}")))
        }
    }

    /// An integer (a number with a fraction is truncated, as C `atoi` of "2.0" would).
    pub fn int(&mut self) -> Result<i64> {
        let t = self.text()?;
        if let Some(v) = parse_i64_strict(&t) {
            return Ok(v);
        }
        match parse_f64_strict(&t) {
            Some(v) if v.is_finite() && v.abs() < 9.2e18 => Ok(v.trunc() as i64),
            _ => Err(self.error(format_args!("expected an integer, found '{t}'"))),
        }
    }

    /// A count that must be >= 1 (at most 2^31 - 1, like upstream's `int`).
    pub fn count(&mut self) -> Result<usize> {
        let v = self.int()?;
        if (1..=i32::MAX as i64).contains(&v) {
            Ok(v as usize)
        } else {
            Err(self.error(format_args!("expected a positive count, found {v}")))
        }
    }

    pub fn vec3(&mut self) -> Result<[f64; 3]> {
        Ok([self.f64()?, self.f64()?, self.f64()?])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn values_and_errors_name_the_flag() {
        let w = words("-a 1.5 -b x -c -d 2.0 -e 0 -f inf");
        let mut c = FlagWords::new(&w);
        assert_eq!(c.next_flag().as_deref(), Some("-a"));
        assert_eq!(c.f64().unwrap(), 1.5);
        c.next_flag();
        assert_eq!(
            c.f64().unwrap_err().message,
            "-b: expected a number, found 'x'"
        );
        c.next_flag();
        assert_eq!(
            c.int().unwrap_err().message,
            "-c: expected an integer, found '-d'"
        );
        assert_eq!(c.int().unwrap(), 2);
        c.next_flag();
        assert!(c
            .count()
            .unwrap_err()
            .message
            .starts_with("-e: expected a positive count"));
        c.next_flag();
        assert!(c
            .f64()
            .unwrap_err()
            .message
            .starts_with("-f: expected a number"));
        assert_eq!(c.text().unwrap_err().message, "-f: missing value");
        assert_eq!(c.remaining(), 0);
    }
}

/// Edit distance (insertions, deletions, substitutions and swaps of neighbours), ignoring case.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.to_lowercase().chars().collect();
    let b: Vec<char> = b.to_lowercase().chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for j in 0..=b.len() {
        d[0][j] = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[a.len()][b.len()]
}

/// The known flag nearest to an unknown `word`, when it is near enough to be a typo: at most one
/// difference of case only up to two letters, one edit up to five, two from six letters,
/// three from ten; ties go to the first in `names`.
pub fn nearest<'a>(word: &str, names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let letters = word.trim_start_matches('-').chars().count();
    let most = match letters {
        0..=2 => 0,
        3..=5 => 1,
        6..=9 => 2,
        _ => 3,
    };
    let mut best: Option<(usize, &str)> = None;
    for name in names {
        let d = distance(word, name);
        if d <= most && best.is_none_or(|(b, _)| d < b) {
            best = Some((d, name));
        }
    }
    best.map(|(_, n)| n)
}

/// The usage error for an unknown flag, suggesting the nearest of `names`:
/// `unknown flag '-cel' (did you mean -cell?)`.
pub fn unknown_flag<'a>(word: &str, names: impl IntoIterator<Item = &'a str>) -> Error {
    let hint = match nearest(word, names) {
        Some(n) => format!(" (did you mean {n}?)"),
        None => String::new(),
    };
    Error::usage(format!("unknown flag '{word}'{hint}")).with_flag(word)
}

#[cfg(test)]
mod suggest_tests {
    use super::*;

    #[test]
    fn suggests_near_flags_only() {
        let names = [
            "-cell",
            "-N",
            "-lambda",
            "-distance",
            "-detpixels",
            "-twotheta_axis",
        ];
        assert_eq!(nearest("-cel", names), Some("-cell"));
        assert_eq!(nearest("-lamda", names), Some("-lambda"));
        assert_eq!(nearest("-distnace", names), Some("-distance"));
        assert_eq!(nearest("-n", names), Some("-N"));
        assert_eq!(nearest("-twotheta_axes", names), Some("-twotheta_axis"));
        assert_eq!(nearest("-frobnicate", names), None);
        assert_eq!(nearest("-x", names), None);
        assert_eq!(
            unknown_flag("-cel", names).message,
            "unknown flag '-cel' (did you mean -cell?)"
        );
        assert_eq!(
            unknown_flag("-bogus", names).message,
            "unknown flag '-bogus'"
        );
    }
}
