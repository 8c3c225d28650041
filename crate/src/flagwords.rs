//! Did-you-mean for an unknown flag, for every program's table (nanobragg, nonbragg, noisify):
//! the nearest known name by edit distance, when it is near enough to be a typo.

use crate::error::Error;

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
