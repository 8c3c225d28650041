//! The structure-aware decoder: bytes → a program's words, drawn from a grammar derived from
//! the program's flag table (names, aliases, value kinds), with hostile numbers.

use nanobragg::args::{Flag, Kind};
use std::sync::LazyLock;

/// What the values of a flag are.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Val {
    /// A number (f64).
    N,
    /// A count or index (integer).
    I,
    /// An input file name.
    F,
    /// An output file name.
    O,
    /// A word (`-pivot`, `-precision`, `-backend`, `-misset random`).
    W,
}

/// Every flag name the decoder emits for nanobragg (for the test that checks them against the
/// parser).
pub fn flag_names() -> impl Iterator<Item = &'static str> {
    grammar_flag_names(&NANOBRAGG)
}

/// Numbers that break things: non-finite, signed zero, extremes of f64 and of the integer
/// types, values just past common limits, and text the parsers must reject.
const HOSTILE: &[&str] = &[
    "nan",
    "NaN",
    "-nan",
    "inf",
    "-inf",
    "infinity",
    "-0",
    "0",
    "1e308",
    "-1e308",
    "1e-308",
    "4.9e-324",
    "-1e19",
    "1e19",
    "1e300",
    "1e-300",
    "2147483647",
    "2147483648",
    "-2147483648",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551616",
    "1e6",
    "1e7",
    "1e9",
    "1000000",
    "100000",
    "65536",
    "0.5",
    "1",
    "2",
    "3",
    "-1",
    "-2",
    "10",
    "90",
    "180",
    "-90",
    "360",
    "100",
    "0.1",
    "1e-10",
    "1e-6",
    "0x10",
    "1e",
    ".",
    "+",
    "-",
    "",
    "1,5",
    "abc",
];

/// Words for the word-valued flags.
const WORDS: &[&str] = &[
    "random",
    "sample",
    "beam",
    "f32",
    "f64",
    "single",
    "double",
    "cpu",
    "auto",
    "x",
    "pilatus6m",
    "eiger2-4m",
];

/// Input file names: the fixtures, the fuzzed file, and ones that do not exist.
const FILES: &[&str] = &[
    "x.hkl", "far.hkl", "A.mat", "src.txt", "img.img", "fuzz.dat", "fuzz.dat", "missing",
];

/// A reader over the fuzz input; past the end it reads zeros.
struct Bytes<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Bytes<'a> {
    fn done(&self) -> bool {
        self.pos >= self.data.len()
    }
    fn u8(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }
    fn u64(&mut self) -> u64 {
        (0..8).fold(0u64, |acc, _| (acc << 8) | self.u8() as u64)
    }
    fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[self.u8() as usize % from.len()]
    }
    /// The bytes after the current position (all of them, to the end).
    fn rest(&mut self) -> &'a [u8] {
        let r = &self.data[self.pos.min(self.data.len())..];
        self.pos = self.data.len();
        r
    }
    fn number(&mut self, integer: bool) -> String {
        match self.u8() % 8 {
            0..=3 => self.pick(HOSTILE).to_string(),
            4 => (self.u8() as i64 - 64).to_string(),
            5 => (self.u64() as i64).to_string(),
            6 if !integer => format!("{:e}", f64::from_bits(self.u64())),
            6 => (self.u64() as i64 >> (self.u8() % 64)).to_string(),
            _ => format!("{}", self.u8() as f64 / 4.0),
        }
    }
}

/// Words for the argument target.
///
/// `W` followed by text: the text's whitespace-separated words, literally (seeds are the golden
/// cases' command lines); after a NUL byte, the rest is the file `fuzz.dat`. Otherwise the bytes are a program: a base set-up (a small cubic crystal
/// and detector, so that resolution gets past the required inputs), then per step a flag with
/// values of its kinds drawn from [`HOSTILE`] and from the input, a stray number, a flag with a
/// wrong number of values, or "the rest of the input is the file `fuzz.dat`".
pub fn decode_words(data: &[u8]) -> (Vec<String>, Option<&[u8]>) {
    decode_with(data, &NANOBRAGG)
}

/// What the structure-aware decoder draws from, per program.
pub struct Grammar {
    /// The base set-up (words), used unless the first byte is a multiple of 4.
    pub base: &'static str,
    /// Each flag name (aliases included) with its values' kinds (`"nnn"`: three numbers).
    pub flags: Vec<(&'static str, String)>,
    pub files: &'static [&'static str],
    pub words: &'static [&'static str],
}

/// nanoBragg's command line: every row of `args::FLAGS` but `-pdb` (structure factors from a
/// model are the `model` target's; a fuzzed model for every detector is too slow a body).
pub static NANOBRAGG: LazyLock<Grammar> = LazyLock::new(|| Grammar {
    base: "-cell 100 100 100 90 90 90 -default_F 100 -N 2 -detpixels 8 -distance 100",
    flags: flags_of(nanobragg::args::FLAGS, &["-pdb"]),
    files: FILES,
    words: WORDS,
});

/// Words for a grammar (see [`decode_words`]).
pub fn decode_with<'a>(data: &'a [u8], g: &Grammar) -> (Vec<String>, Option<&'a [u8]>) {
    if let Some(rest) = data.strip_prefix(b"W") {
        let (text, file) = match rest.iter().position(|&b| b == 0) {
            Some(i) => (&rest[..i], Some(&rest[i + 1..])),
            None => (rest, None),
        };
        let text = String::from_utf8_lossy(text);
        return (text.split_whitespace().map(String::from).collect(), file);
    }
    let mut b = Bytes { data, pos: 0 };
    let mut words: Vec<String> = Vec::new();
    if !b.u8().is_multiple_of(4) {
        for w in g.base.split(' ') {
            words.push(w.to_string());
        }
    }
    let mut extra = None;
    let mut steps = 0;
    while !b.done() && steps < 64 {
        steps += 1;
        match b.u8() % 16 {
            0..=11 => {
                let (name, vals) = &g.flags[b.u8() as usize % g.flags.len()];
                words.push(name.to_string());
                for v in vals.chars() {
                    words.push(value(&mut b, v, g));
                }
            }
            12 => words.push(b.number(false)),
            13 => {
                let (name, _) = &g.flags[b.u8() as usize % g.flags.len()];
                words.push(name.to_string());
                for _ in 0..b.u8() % 4 {
                    words.push(b.number(false));
                }
            }
            14 => {
                // a word of the input's own bytes
                let n = (b.u8() % 12) as usize;
                let w: String = (0..n).map(|_| (b.u8() % 95 + 32) as char).collect();
                words.push(w);
            }
            _ => {
                extra = Some(b.rest());
            }
        }
    }
    (words, extra)
}

fn value(b: &mut Bytes, kind: char, g: &Grammar) -> String {
    let kind = match kind {
        'n' => Val::N,
        'i' => Val::I,
        'f' => Val::F,
        'o' => Val::O,
        _ => Val::W,
    };
    match kind {
        Val::N => b.number(false),
        Val::I => b.number(true),
        Val::F => b.pick(g.files).to_string(),
        Val::O => "out.bin".to_string(),
        Val::W => b.pick(g.words).to_string(),
    }
}

/// The noisify grammar: a small valid set-up (an 8×8 image, a Gaussian PSF, noise sources).
pub static NOISIFY: LazyLock<Grammar> = LazyLock::new(|| {
    Grammar {
    base: "-floatfile float.bin -detpixels 8 -pixel 0.1 -distance 100 -psf gauss -psf_fwhm 100 -readout 3 -flicker 0.01 -calibration 0.02",
    flags: flags_of(nanobragg::noisify::options::flags(), &[]),
    files: &[
        "float.bin",
        "img.img",
        "fuzz.dat",
        "fuzz.dat",
        "water.stol",
        "missing",
    ],
    words: &["gauss", "fiber", "16", "32", "8", "x"],
}
});

/// The nonBragg grammar: a small valid set-up (water, an 8×8 detector).
pub static NONBRAGG: LazyLock<Grammar> = LazyLock::new(|| Grammar {
    base: "-stol water.stol -detpixels 8 -pixel 0.1 -distance 100 -lambda 1 -thickness 0.1",
    flags: flags_of(nanobragg::nonbragg::options::flags(), &[]),
    files: &[
        "water.stol",
        "src.txt",
        "fuzz.dat",
        "fuzz.dat",
        "float.bin",
        "missing",
    ],
    words: &["sample", "beam", "pilatus6m", "eiger2-16m", "x", "random"],
});

/// Every flag name of a grammar (for the tests that check them against the programs' parsers).
pub fn grammar_flag_names(g: &Grammar) -> impl Iterator<Item = &'static str> + '_ {
    g.flags.iter().map(|(n, _)| *n)
}

/// A program's flags with their values' kinds, from its table: every name and alias of every
/// row (but `except`), as many values as the row takes at most: `f` a file read, `o` a file
/// written, `w` a word (values shown as `a|b`), `i` a count or pixel index, `n` a number.
pub fn flags_of<O>(table: &[Flag<O>], except: &[&str]) -> Vec<(&'static str, String)> {
    let mut v = Vec::new();
    for f in table.iter().filter(|f| !except.contains(&f.name)) {
        let kinds: String = f
            .values
            .split_whitespace()
            .map(|w| match w {
                "FILE" if f.kind == Kind::OutputFile => 'o',
                "FILE" => 'f',
                w if w.contains('|') => 'w',
                "n" | "px" | "xmin" | "xmax" | "ymin" | "ymax" | "f" | "s" => 'i',
                _ => 'n',
            })
            .collect();
        for n in f.names() {
            v.push((n, kinds.clone()));
        }
    }
    v
}
