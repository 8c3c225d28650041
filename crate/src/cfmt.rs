//! C-compatible number parsing (`atof`, `atoi`) and printing (`printf("%g")`).
//!
//! Upstream reads command-line values and SMV header values with `atof`/`atoi` and writes SMV
//! headers and console statistics with `%g`; these functions reproduce glibc's behaviour so that
//! headers are byte-identical.

/// C `isspace` in the "C" locale.
fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0B | 0x0C | b'\r')
}

fn eq_ignore_case_prefix(b: &[u8], word: &[u8]) -> bool {
    b.len() >= word.len() && b[..word.len()].eq_ignore_ascii_case(word)
}

/// Scans the longest prefix of `b` that C `strtod` accepts.
/// Returns the value and the number of bytes consumed (0 when there is no number at all).
pub fn scan_f64(b: &[u8]) -> (f64, usize) {
    let mut i = 0;
    while i < b.len() && is_c_space(b[i]) {
        i += 1;
    }
    let mut negative = false;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        negative = b[i] == b'-';
        i += 1;
    }
    let signed = |v: f64| if negative { -v } else { v };
    let rest = &b[i..];

    // inf / infinity
    if eq_ignore_case_prefix(rest, b"inf") {
        let n = if eq_ignore_case_prefix(rest, b"infinity") {
            8
        } else {
            3
        };
        return (signed(f64::INFINITY), i + n);
    }
    // nan, nan(n-char-sequence)
    if eq_ignore_case_prefix(rest, b"nan") {
        let mut n = 3;
        if rest.get(3) == Some(&b'(') {
            let mut j = 4;
            while j < rest.len() && (rest[j].is_ascii_alphanumeric() || rest[j] == b'_') {
                j += 1;
            }
            if rest.get(j) == Some(&b')') {
                n = j + 1;
            }
        }
        return (signed(f64::NAN), i + n);
    }
    // hexadecimal
    if rest.len() >= 2 && rest[0] == b'0' && (rest[1] == b'x' || rest[1] == b'X') {
        if let Some((v, n)) = scan_hex(&rest[2..]) {
            return (signed(v), i + 2 + n);
        }
        // "0x" with no hex digits: only the "0" converts.
        return (signed(0.0), i + 1);
    }
    // decimal
    let start = i;
    let mut j = i;
    let mut digits = 0;
    while j < b.len() && b[j].is_ascii_digit() {
        j += 1;
        digits += 1;
    }
    if j < b.len() && b[j] == b'.' {
        j += 1;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
            digits += 1;
        }
    }
    if digits == 0 {
        return (0.0, 0);
    }
    if j < b.len() && (b[j] == b'e' || b[j] == b'E') {
        let mut k = j + 1;
        if k < b.len() && (b[k] == b'+' || b[k] == b'-') {
            k += 1;
        }
        if k < b.len() && b[k].is_ascii_digit() {
            while k < b.len() && b[k].is_ascii_digit() {
                k += 1;
            }
            j = k;
        }
    }
    // The matched text is pure ASCII digits / '.' / exponent, which Rust's correctly rounded
    // parser accepts (the same result as glibc's strtod).
    let text = std::str::from_utf8(&b[start..j]).unwrap_or("0");
    let v = text.parse::<f64>().unwrap_or(0.0);
    (signed(v), j)
}

/// Parses the part of a hexadecimal float after `0x`. Returns `None` when no hex digit follows.
fn scan_hex(b: &[u8]) -> Option<(f64, usize)> {
    let mut mant: u64 = 0;
    let mut sticky = false;
    let mut exp2: i64 = 0;
    let mut digits = 0;
    let mut j = 0;
    let mut seen_point = false;
    while j < b.len() {
        let c = b[j];
        if c == b'.' && !seen_point {
            seen_point = true;
            j += 1;
            continue;
        }
        let d = match (c as char).to_digit(16) {
            Some(d) => d as u64,
            None => break,
        };
        digits += 1;
        if mant >> 56 == 0 {
            mant = (mant << 4) | d;
            if seen_point {
                exp2 -= 4;
            }
        } else {
            sticky |= d != 0;
            if !seen_point {
                exp2 += 4;
            }
        }
        j += 1;
    }
    if digits == 0 {
        return None;
    }
    if j < b.len() && (b[j] == b'p' || b[j] == b'P') {
        let mut k = j + 1;
        let mut eneg = false;
        if k < b.len() && (b[k] == b'+' || b[k] == b'-') {
            eneg = b[k] == b'-';
            k += 1;
        }
        if k < b.len() && b[k].is_ascii_digit() {
            let mut e: i64 = 0;
            while k < b.len() && b[k].is_ascii_digit() {
                e = (e * 10 + (b[k] - b'0') as i64).min(100_000);
                k += 1;
            }
            exp2 += if eneg { -e } else { e };
            j = k;
        }
    }
    if mant == 0 {
        return Some((0.0, j));
    }
    // At most 60 significant bits: OR-ing the sticky bit into the lowest bit keeps the
    // round-to-nearest-even conversion to 53 bits correct.
    let m = (mant | sticky as u64) as f64;
    let mut v = m;
    let mut e = exp2;
    while e > 0 {
        let s = e.min(1000);
        v *= 2f64.powi(s as i32);
        e -= s;
    }
    while e < 0 {
        let s = (-e).min(1000);
        v *= 2f64.powi(-(s as i32));
        e += s;
    }
    Some((v, j))
}

/// C `atof`: leading whitespace, then the longest valid floating-point prefix; 0.0 if none.
pub fn atof(s: &str) -> f64 {
    scan_f64(s.as_bytes()).0
}

/// Scans C `strtol`-style decimal integer: whitespace, optional sign, digits.
/// Returns the value (saturated) and the bytes consumed (0 when there are no digits).
fn scan_i64(b: &[u8]) -> (i64, usize, bool) {
    let mut i = 0;
    while i < b.len() && is_c_space(b[i]) {
        i += 1;
    }
    let mut negative = false;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        negative = b[i] == b'-';
        i += 1;
    }
    let start = i;
    let mut v: i64 = 0;
    let mut overflow = false;
    while i < b.len() && b[i].is_ascii_digit() {
        let d = (b[i] - b'0') as i64;
        let next = v.checked_mul(10).and_then(|x| {
            if negative {
                x.checked_sub(d)
            } else {
                x.checked_add(d)
            }
        });
        match next {
            Some(n) => v = n,
            None => {
                overflow = true;
                v = if negative { i64::MIN } else { i64::MAX };
            }
        }
        i += 1;
    }
    if i == start {
        return (0, 0, false);
    }
    (v, i, overflow)
}

/// C `atoi` (as `strtol`): leading whitespace, optional sign, decimal digits; 0 if none;
/// saturates at the i64 limits on overflow.
pub fn atoi(s: &str) -> i64 {
    scan_i64(s.as_bytes()).0
}

/// Whole-token floating-point parse (surrounding whitespace allowed): `1e-3`, `-5`, `.5`,
/// `inf`, `nan`, `0x1p-2`. `None` if any part of the token is not part of the number.
pub fn parse_f64_strict(s: &str) -> Option<f64> {
    let t = s.trim_matches(|c: char| c.is_ascii() && is_c_space(c as u8));
    if t.is_empty() {
        return None;
    }
    let (v, n) = scan_f64(t.as_bytes());
    (n > 0 && n == t.len()).then_some(v)
}

/// Whole-token decimal integer parse (surrounding whitespace allowed): `[+-]digits`.
/// `None` for anything else or on overflow.
pub fn parse_i64_strict(s: &str) -> Option<i64> {
    let t = s.trim_matches(|c: char| c.is_ascii() && is_c_space(c as u8));
    if t.is_empty() {
        return None;
    }
    let (v, n, overflow) = scan_i64(t.as_bytes());
    (n > 0 && n == t.len() && !overflow).then_some(v)
}

/// C `printf("%g", x)`.
pub fn fmt_g(x: f64) -> String {
    fmt_g_prec(x, 6)
}

/// C `printf("%.<prec>g", x)` (glibc): `prec` significant digits (0 means 1), trailing zeros
/// removed, exponent form when the exponent is < -4 or >= prec, at least two exponent digits.
pub fn fmt_g_prec(x: f64, prec: usize) -> String {
    let p = prec.max(1);
    let neg = x.is_sign_negative();
    let sign = if neg { "-" } else { "" };
    if x.is_nan() {
        return format!("{sign}nan");
    }
    if x.is_infinite() {
        return format!("{sign}inf");
    }
    let a = x.abs();
    if a == 0.0 {
        return format!("{sign}0");
    }
    // Correctly rounded (ties to even on exact decimal ties, like glibc) scientific form.
    let sci = format!("{:.*e}", p - 1, a);
    let (mant, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i64 = exp.parse().unwrap_or(0);
    let digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();

    if exp < -4 || exp >= p as i64 {
        let (lead, frac) = digits.split_at(1);
        let frac = frac.trim_end_matches('0');
        let esign = if exp < 0 { '-' } else { '+' };
        if frac.is_empty() {
            format!("{sign}{lead}e{esign}{:02}", exp.abs())
        } else {
            format!("{sign}{lead}.{frac}e{esign}{:02}", exp.abs())
        }
    } else if exp >= 0 {
        let (int, frac) = digits.split_at(exp as usize + 1);
        let frac = frac.trim_end_matches('0');
        if frac.is_empty() {
            format!("{sign}{int}")
        } else {
            format!("{sign}{int}.{frac}")
        }
    } else {
        let zeros = "0".repeat((-exp - 1) as usize);
        let frac = digits.trim_end_matches('0');
        format!("{sign}0.{zeros}{frac}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g_basic_values() {
        let cases: &[(f64, &str)] = &[
            (565.375, "565.375"),
            (0.1, "0.1"),
            (1e-05, "1e-05"),
            (123456.0, "123456"),
            (1234567.0, "1.23457e+06"),
            (0.0001, "0.0001"),
            (0.00001234, "1.234e-05"),
            (2.5e7, "2.5e+07"),
            (100.0, "100"),
            (6.45, "6.45"),
            (-6.5, "-6.5"),
            (65.5, "65.5"),
            (0.0, "0"),
            (-0.0, "-0"),
            (1.0, "1"),
            (999999.0, "999999"),
            (999999.5, "1e+06"),
            (9.9999996, "10"),
            (0.000099999996, "0.0001"),
            (1e100, "1e+100"),
            (1.5e-300, "1.5e-300"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (f64::NAN, "nan"),
            (-f64::NAN, "-nan"),
            (55000.0 / 3.0, "18333.3"),
            (7.123456789, "7.12346"),
            (1e-4 * 1.000001, "0.0001"),
            (100.000000001, "100"),
            (0.30000000000000004, "0.3"),
            (5e-324, "4.94066e-324"),
            (f64::MAX, "1.79769e+308"),
        ];
        for &(x, want) in cases {
            assert_eq!(fmt_g(x), want, "x = {x:e}");
        }
    }

    #[test]
    fn g_rounding_ties_to_even_like_glibc() {
        assert_eq!(fmt_g_prec(2.5, 1), "2");
        assert_eq!(fmt_g_prec(3.5, 1), "4");
        assert_eq!(fmt_g_prec(0.125, 2), "0.12");
        assert_eq!(fmt_g_prec(0.375, 2), "0.38");
        assert_eq!(fmt_g_prec(100.5, 3), "100");
        assert_eq!(fmt_g_prec(101.5, 3), "102");
        // 100.05 is not exactly representable (slightly below), so it rounds down.
        assert_eq!(fmt_g_prec(100.05, 4), "100");
        assert_eq!(fmt_g_prec(1234567.0, 0), "1e+06");
        assert_eq!(fmt_g_prec(1234567.0, 7), "1234567");
        assert_eq!(fmt_g_prec(0.1, 17), "0.10000000000000001");
        assert_eq!(fmt_g_prec(-1.0 / 3.0, 3), "-0.333");
        assert_eq!(fmt_g_prec(12345.0, 2), "1.2e+04");
    }

    #[test]
    fn atof_prefixes() {
        assert_eq!(atof("1.5"), 1.5);
        assert_eq!(atof("  \t-2.5e3xyz"), -2500.0);
        assert_eq!(atof("1e"), 1.0);
        assert_eq!(atof("1e+"), 1.0);
        assert_eq!(atof("1.e2"), 100.0);
        assert_eq!(atof(".5"), 0.5);
        assert_eq!(atof("-.5e-1;"), -0.05);
        assert_eq!(atof("."), 0.0);
        assert_eq!(atof("abc"), 0.0);
        assert_eq!(atof(""), 0.0);
        assert_eq!(atof("+"), 0.0);
        assert_eq!(atof("512;\nDIM"), 512.0);
        assert_eq!(atof("INF"), f64::INFINITY);
        assert_eq!(atof("-Infinity and"), f64::NEG_INFINITY);
        assert_eq!(atof("infinit"), f64::INFINITY);
        assert!(atof("NaN").is_nan());
        assert!(atof("nan(123)").is_nan());
        assert_eq!(atof("0x1p-2"), 0.25);
        assert_eq!(atof("0X1.8P1"), 3.0);
        assert_eq!(atof("0x10"), 16.0);
        assert_eq!(atof("0x"), 0.0);
        assert_eq!(atof("0xg"), 0.0);
        assert_eq!(atof("-0x.8"), -0.5);
        assert_eq!(atof("1e400"), f64::INFINITY);
        assert_eq!(atof("1e-400"), 0.0);
        assert_eq!(atof("0.1"), 0.1);
        assert_eq!(
            atof("123456789012345678901234567890"),
            1.2345678901234568e29
        );
        assert!(atof("-0").is_sign_negative());
    }

    #[test]
    fn atof_consumed_length() {
        assert_eq!(scan_f64(b"  12.5e1x"), (125.0, 8));
        assert_eq!(scan_f64(b"1e+x").1, 1);
        assert_eq!(scan_f64(b"nan(x").1, 3);
        assert_eq!(scan_f64(b"nan(ab_1)z").1, 9);
        assert_eq!(scan_f64(b"x").1, 0);
    }

    #[test]
    fn atoi_prefixes() {
        assert_eq!(atoi("42"), 42);
        assert_eq!(atoi("  -17abc"), -17);
        assert_eq!(atoi("+8"), 8);
        assert_eq!(atoi("1e3"), 1);
        assert_eq!(atoi("3.9"), 3);
        assert_eq!(atoi("x"), 0);
        assert_eq!(atoi(""), 0);
        assert_eq!(atoi("-"), 0);
        assert_eq!(atoi("99999999999999999999999"), i64::MAX);
        assert_eq!(atoi("-99999999999999999999999"), i64::MIN);
        assert_eq!(atoi("-9223372036854775808"), i64::MIN);
    }

    #[test]
    fn strict_parsing() {
        assert_eq!(parse_f64_strict("1e-3"), Some(1e-3));
        assert_eq!(parse_f64_strict("-5"), Some(-5.0));
        assert_eq!(parse_f64_strict(".5"), Some(0.5));
        assert_eq!(parse_f64_strict("5."), Some(5.0));
        assert_eq!(parse_f64_strict("inf"), Some(f64::INFINITY));
        assert_eq!(parse_f64_strict("-infinity"), Some(f64::NEG_INFINITY));
        assert!(parse_f64_strict("nan").unwrap().is_nan());
        assert_eq!(parse_f64_strict(" 2.5 "), Some(2.5));
        assert_eq!(parse_f64_strict("0x1p3"), Some(8.0));
        assert_eq!(parse_f64_strict(""), None);
        assert_eq!(parse_f64_strict("  "), None);
        assert_eq!(parse_f64_strict("abc"), None);
        assert_eq!(parse_f64_strict("1.5x"), None);
        assert_eq!(parse_f64_strict("1e"), None);
        assert_eq!(parse_f64_strict("."), None);
        assert_eq!(parse_f64_strict("-"), None);
        assert_eq!(parse_f64_strict("1,5"), None);
        assert_eq!(parse_f64_strict("infx"), None);

        assert_eq!(parse_i64_strict("-5"), Some(-5));
        assert_eq!(parse_i64_strict("+12"), Some(12));
        assert_eq!(parse_i64_strict(" 7 "), Some(7));
        assert_eq!(parse_i64_strict("1.0"), None);
        assert_eq!(parse_i64_strict("1e3"), None);
        assert_eq!(parse_i64_strict(""), None);
        assert_eq!(parse_i64_strict("-"), None);
        assert_eq!(parse_i64_strict("12a"), None);
        assert_eq!(parse_i64_strict("99999999999999999999"), None);
        assert_eq!(parse_i64_strict("9223372036854775807"), Some(i64::MAX));
    }
}
