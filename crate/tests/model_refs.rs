//! Every citation of the model reference in the code and docs exists in `docs/MODEL.md`:
//! "MODEL §x.y" / "MODEL.md §x.y" (a section heading; a bare "§x.y" on the line after a MODEL
//! citation counts too) and "C-QUIRK n" (a row of the quirk table in its §8).

mod common;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Section numbers of the headings of MODEL.md ("## 7. Outputs" -> "7", "### 7.13 Ref" -> "7.13").
fn sections(model: &str) -> BTreeSet<String> {
    model
        .lines()
        .filter(|l| l.starts_with('#'))
        .filter_map(|l| l.trim_start_matches('#').split_whitespace().next())
        .map(|t| t.trim_end_matches('.').to_string())
        .filter(|t| t.starts_with(|c: char| c.is_ascii_digit()))
        .collect()
}

/// Row numbers of the quirk table (`| n | ... |` lines of §8).
fn quirks(model: &str) -> BTreeSet<u32> {
    let start = model.find("## 8. Known quirks").expect("MODEL.md has §8");
    let end = model[start + 1..]
        .find("\n## ")
        .map_or(model.len(), |e| start + 1 + e);
    model[start..end]
        .lines()
        .filter_map(|l| l.strip_prefix("| "))
        .filter_map(|l| l.split(' ').next()?.parse().ok())
        .collect()
}

/// The "§x.y" tokens of a piece of text.
fn section_refs(text: &str) -> Vec<String> {
    text.split('§')
        .skip(1)
        .map(|rest| {
            let t: String = rest
                .trim_start()
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            t.trim_end_matches('.').to_string()
        })
        // "§x.y" as a placeholder in prose is not a citation
        .filter(|t| !t.is_empty())
        .collect()
}

/// The "C-QUIRK n" numbers of a piece of text (also "C-QUIRKs 5, 13").
fn quirk_refs(text: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for rest in text.split("C-QUIRK").skip(1) {
        let rest = rest.strip_prefix('s').unwrap_or(rest);
        for part in rest.split([',', '/']) {
            let n: String = part
                .trim_start()
                .chars()
                .take_while(|c| c.is_ascii_digit())
                .collect();
            match n.parse() {
                Ok(n) => out.push(n),
                Err(_) => break,
            }
            if !part
                .trim_start()
                .chars()
                .all(|c| c.is_ascii_digit() || c == ' ')
            {
                break;
            }
        }
    }
    out
}

/// (line number, sections cited, quirks cited) of each line of a file that cites the model.
fn citations(text: &str) -> Vec<(usize, Vec<String>, Vec<u32>)> {
    let mut out = Vec::new();
    let mut previous_cites = false;
    for (i, line) in text.lines().enumerate() {
        let secs = match line.find("MODEL") {
            Some(at) => section_refs(&line[at..]),
            None if previous_cites => section_refs(line),
            None => Vec::new(),
        };
        let qs = quirk_refs(line);
        previous_cites = line.contains("MODEL");
        if !secs.is_empty() || !qs.is_empty() {
            out.push((i + 1, secs, qs));
        }
    }
    out
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if p.is_dir() {
            if !matches!(
                name.as_str(),
                "node_modules" | "dist" | "target" | "fixtures"
            ) {
                walk(&p, out);
            }
        } else if [
            ".rs", ".wgsl", ".ts", ".mjs", ".js", ".html", ".md", ".toml", ".sh",
        ]
        .iter()
        .any(|x| name.ends_with(x))
        {
            out.push(p);
        }
    }
}

#[test]
fn every_cited_section_and_quirk_exists() {
    let root = common::repo_root();
    let model = std::fs::read_to_string(root.join("docs/MODEL.md")).expect("docs/MODEL.md");
    let (secs, qs) = (sections(&model), quirks(&model));
    assert!(secs.contains("0") && secs.contains("7.13") && secs.contains("4.9.1"));
    assert_eq!(qs.len(), 39, "quirk table rows");

    let mut files = Vec::new();
    for d in [
        "crate",
        "shaders",
        "www",
        "docs",
        "scripts",
        "fuzz",
        "tests/browser",
    ] {
        walk(&root.join(d), &mut files);
    }
    files.push(root.join("README.md"));
    files.retain(|p| !p.ends_with("docs/MODEL.md"));
    let (mut cited, mut bad) = (0usize, Vec::new());
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap_or_default();
        let rel = f.strip_prefix(&root).unwrap_or(f).display().to_string();
        assert!(
            !text.contains(concat!("shared/docs", "/MODEL")),
            "{rel} points to the model reference outside the repository: cite docs/MODEL.md"
        );
        for (line, ss, qq) in citations(&text) {
            for s in ss {
                cited += 1;
                if !secs.contains(&s) {
                    bad.push(format!(
                        "{rel}:{line}: §{s} is not a section of docs/MODEL.md"
                    ));
                }
            }
            for q in qq {
                cited += 1;
                if !qs.contains(&q) {
                    bad.push(format!(
                        "{rel}:{line}: C-QUIRK {q} is not in docs/MODEL.md §8"
                    ));
                }
            }
        }
    }
    println!(
        "{cited} citations of docs/MODEL.md checked in {} files",
        files.len()
    );
    assert!(
        cited >= 50,
        "only {cited} citations found: is the scan broken?"
    );
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn the_citation_scanner_reads_every_form() {
    let text = "// PGM (MODEL §7.3–§7.6), C-QUIRK 13\n\
                //! (MODEL.md §7.7, §7.8) and\n\
                //! the reader (§7.11).\n\
                // nothing here §9\n\
                // MODEL §6.4's range rule; MODEL §0. C-QUIRKs 5, 18 and more\n";
    let c = citations(text);
    assert_eq!(
        c,
        vec![
            (1, vec!["7.3".into(), "7.6".into()], vec![13]),
            (2, vec!["7.7".into(), "7.8".into()], vec![]),
            (3, vec!["7.11".into()], vec![]),
            (5, vec!["6.4".into(), "0".into()], vec![5, 18]),
        ]
    );
}
