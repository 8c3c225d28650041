//! The crate's layers hold: every `crate::` path of a unit (a file or folder directly under
//! `crate/src`) names a unit of its own layer or a lower one, per the layer table of
//! `docs/ARCHITECTURE.md` (parsed here, so the document and the test cannot drift apart), and
//! the two backends (`cpu`, `gpu`) import neither the other. Code inside `#[cfg(test)]` modules
//! at the end of a file is not counted (tests may reach up). `--nocapture` prints the graph.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// `unit -> layer` from the table between the `<!-- layers` markers of ARCHITECTURE.md.
fn layer_table() -> BTreeMap<String, usize> {
    let doc = std::fs::read_to_string(root().join("../docs/ARCHITECTURE.md")).unwrap();
    let start = doc
        .find("<!-- layers")
        .expect("ARCHITECTURE.md: no layer table");
    let end = doc
        .find("<!-- /layers -->")
        .expect("ARCHITECTURE.md: layer table not closed");
    let mut table = BTreeMap::new();
    for line in doc[start..end].lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let Some(layer) = cells.get(1).and_then(|c| c.parse::<usize>().ok()) else {
            continue;
        };
        for unit in cells[2].split('`').skip(1).step_by(2) {
            assert!(
                table.insert(unit.to_string(), layer).is_none(),
                "{unit} is in two layers"
            );
        }
    }
    assert!(table.len() > 10, "layer table too short: {table:?}");
    table
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The units a source text names as `crate::unit`, `crate::{unit, …}` included; comments and a
/// trailing `#[cfg(test)] mod` left out.
fn imports(text: &str) -> BTreeSet<String> {
    let text = match text.find("#[cfg(test)]\nmod ") {
        Some(i) => &text[..i],
        None => text,
    };
    let code: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = BTreeSet::new();
    let mut rest = code.as_str();
    while let Some(i) = rest.find("crate::") {
        let after = &rest[i + 7..];
        if let Some(group) = after.strip_prefix('{') {
            // top-level items of the brace group
            let (mut depth, mut item_start) = (1, 0);
            for (k, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            out.insert(ident(&group[item_start..k]));
                            break;
                        }
                    }
                    ',' if depth == 1 => {
                        out.insert(ident(&group[item_start..k]));
                        item_start = k + 1;
                    }
                    _ => {}
                }
            }
        } else {
            out.insert(ident(after));
        }
        rest = after;
    }
    out.remove("");
    out
}

/// `unit -> units it imports`, for every unit under crate/src except the crate roots and the
/// separate binaries of `bin/` (they use the library by its name, like any user).
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = root().join("src");
    let mut g = BTreeMap::new();
    for e in std::fs::read_dir(&src).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_stem().unwrap().to_string_lossy().into_owned();
        if ["lib", "main", "bin"].contains(&name.as_str()) {
            continue;
        }
        let mut files = Vec::new();
        if p.is_dir() {
            rust_files(&p, &mut files);
        } else if p.extension().is_some_and(|x| x == "rs") {
            files.push(p.clone());
        } else {
            continue;
        }
        let deps: &mut BTreeSet<String> = g.entry(name.clone()).or_default();
        for f in files {
            deps.extend(imports(&std::fs::read_to_string(&f).unwrap()));
        }
        deps.remove(&name);
    }
    g
}

#[test]
fn the_parser_reads_grouped_paths() {
    let t = "use crate::{a::B, b, c::{d, e}};\n// use crate::zz;\nfn f() { crate::f::g(); }\n\
             #[cfg(test)]\nmod tests { use crate::t; }";
    let got: Vec<_> = imports(t).into_iter().collect();
    assert_eq!(got, ["a", "b", "c", "f"]);
}

#[test]
fn imports_point_down() {
    let table = layer_table();
    let g = graph();
    let mut bad = Vec::new();
    for (unit, deps) in &g {
        let Some(&layer) = table.get(unit) else {
            bad.push(format!(
                "{unit}: not in the layer table of docs/ARCHITECTURE.md"
            ));
            continue;
        };
        let shown: Vec<String> = deps
            .iter()
            .map(|d| {
                format!(
                    "{d}({})",
                    table.get(d).map_or("?".into(), |l| l.to_string())
                )
            })
            .collect();
        println!("{layer} {unit:10} -> {}", shown.join(" "));
        for d in deps {
            match table.get(d) {
                None => bad.push(format!(
                    "{unit} imports {d}, which is not in the layer table"
                )),
                Some(&l) if l > layer => bad.push(format!(
                    "{unit} (layer {layer}) imports {d} (layer {l}): points up"
                )),
                _ => {}
            }
        }
    }
    for (a, b) in [("cpu", "gpu"), ("gpu", "cpu")] {
        if g.get(a).is_some_and(|d| d.contains(b)) {
            bad.push(format!("{a} imports {b}: the backends are independent"));
        }
    }
    for unit in table.keys() {
        if !g.contains_key(unit) {
            bad.push(format!(
                "the layer table names {unit}, which is not under crate/src"
            ));
        }
    }
    assert!(bad.is_empty(), "layer violations:\n{}", bad.join("\n"));
}
