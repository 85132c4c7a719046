//! The findings (`results/FINDINGS.md`) say only what the committed results say (issues 38
//! and 62): the file is rendered from its template (`sims/findings/*.md`) and equals the
//! rendering; every comparative sentence of the template cites a claim; every experiment's
//! claims, evaluated afresh from its committed parquet, hold and equal its committed
//! `claims.md`; every "m ± h" is a cell of a committed table at the digits printed; every
//! `results/…` path named exists.

use std::path::Path;

/// Every "m ± h" in `text` as (m, its decimals, h, its decimals, line), signs read from
/// '-', '−' and '+'.
fn intervals(text: &str) -> Vec<(f64, usize, f64, usize, usize)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let chars: Vec<char> = line.chars().collect();
        let mut k = 2;
        while k + 2 < chars.len() {
            if chars[k] == '±' && chars[k - 1] == ' ' && chars[k + 1] == ' ' {
                let number = |from: usize, back: bool| -> Option<(String, usize)> {
                    let mut s = String::new();
                    let mut j = from as isize;
                    while j >= 0 && (j as usize) < chars.len() {
                        let c = chars[j as usize];
                        if c.is_ascii_digit() || c == '.' {
                            s.push(c);
                        } else {
                            break;
                        }
                        j += if back { -1 } else { 1 };
                    }
                    if back {
                        s = s.chars().rev().collect();
                        if j >= 0 && matches!(chars[j as usize], '-' | '−') {
                            s.insert(0, '-');
                        }
                    }
                    let decimals = s.split_once('.').map(|(_, d)| d.len())?;
                    Some((s, decimals))
                };
                if let (Some((m, dm)), Some((h, dh))) = (number(k - 2, true), number(k + 2, false))
                {
                    if let (Ok(m), Ok(h)) = (m.parse(), h.parse()) {
                        out.push((m, dm, h, dh, i + 1));
                    }
                }
            }
            k += 1;
        }
    }
    out
}

fn committed_tables(dir: &Path, out: &mut String) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if path
                .file_name()
                .is_some_and(|n| n != "superseded" && n != "parts")
            {
                committed_tables(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "md") && dir != Path::new("results") {
            out.push_str(&std::fs::read_to_string(&path).unwrap());
        }
    }
}

#[test]
fn every_interval_in_the_findings_is_a_committed_table_cell() {
    let findings = std::fs::read_to_string("results/FINDINGS.md").unwrap();
    let mut tables = String::new();
    committed_tables(Path::new("results"), &mut tables);
    let cells = intervals(&tables);
    let cited = intervals(&findings);
    assert!(cited.len() >= 50, "only {} intervals found", cited.len());
    let mut missing = Vec::new();
    for &(m, dm, h, dh, line) in &cited {
        let (tm, th) = (
            0.5 * 10f64.powi(-(dm as i32)),
            0.5 * 10f64.powi(-(dh as i32)),
        );
        let found = cells.iter().any(|&(cm, _, ch, _, _)| {
            (cm - m).abs() <= tm * (1.0 + 1e-9) && (ch - h).abs() <= th * (1.0 + 1e-9)
        });
        if !found {
            missing.push(format!("line {line}: {m} ± {h}"));
        }
    }
    assert!(
        missing.is_empty(),
        "{} intervals in results/FINDINGS.md are in no committed table (at the digits \
         printed):\n{}",
        missing.len(),
        missing.join("\n")
    );
}

#[test]
fn every_results_path_in_the_findings_exists() {
    let findings = std::fs::read_to_string("results/FINDINGS.md").unwrap();
    let mut missing = Vec::new();
    for (i, line) in findings.lines().enumerate() {
        for piece in line.split('`').skip(1).step_by(2) {
            if let Some(path) = piece.strip_prefix("results/") {
                let path = path.trim_end_matches(['/', ',', '.']);
                // `results/<exp>/regret-<variant>` style patterns name a family, not a file.
                if !path.contains('<')
                    && !path.contains('*')
                    && !Path::new("results").join(path).exists()
                {
                    missing.push(format!("line {}: results/{path}", i + 1));
                }
            }
        }
    }
    assert!(missing.is_empty(), "missing: {}", missing.join(", "));
}

#[test]
fn the_findings_are_the_rendering_of_their_template() {
    use dptune::sim::findings::{render_text, Rendered};
    let rendered = match render_text(Path::new("sims/findings"), Path::new("results")).unwrap() {
        Rendered::Text(t) => t,
        Rendered::Missing(exp) => panic!("the template cites {exp}, which has no results"),
    };
    let committed = std::fs::read_to_string("results/FINDINGS.md").unwrap();
    if rendered != committed {
        let line = rendered
            .lines()
            .zip(committed.lines())
            .position(|(a, b)| a != b)
            .map_or(
                rendered.lines().count().min(committed.lines().count()),
                |i| i,
            )
            + 1;
        panic!(
            "results/FINDINGS.md is not the rendering of sims/findings/ (first difference at line \
             {line}): run `dptune sim report sims/*.toml` and commit it"
        );
    }
}

/// Words that compare two things: a sentence holding one must cite a claim.
const COMPARATIVE: &[&str] = &[
    "better",
    "worse",
    "worst",
    "ahead",
    "win",
    "wins",
    "won",
    "winning",
    "resolved",
    "unresolved",
    "tie",
    "ties",
    "tied",
    "fall",
    "falls",
    "falling",
    "rise",
    "rises",
    "rising",
    "beat",
    "beats",
    "overtake",
    "overtakes",
    "outperform",
    "outperforms",
];

/// The sentences of the template's prose (tables, headings and comments aside), each with the
/// line it starts on: pieces ending at ". ", "; ", "! ", "? " or a paragraph break, never
/// inside a `{{reference}}` or parentheses, nor after "e.g." or "i.e.".
fn sentences(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut piece = String::new();
    let mut start = 0;
    let (mut depth, mut parens) = (0usize, 0usize);
    let flush = |piece: &mut String, start: usize, out: &mut Vec<(usize, String)>| {
        if !piece.trim().is_empty() {
            out.push((start, std::mem::take(piece)));
        }
        piece.clear();
    };
    for (i, line) in text.lines().enumerate() {
        let prose = !(line.starts_with('|') || line.starts_with('#') || line.starts_with("<!--"));
        if !prose || line.trim().is_empty() {
            flush(&mut piece, start, &mut out);
            parens = 0;
            continue;
        }
        let chars: Vec<char> = line.chars().collect();
        for (k, &c) in chars.iter().enumerate() {
            if piece.trim().is_empty() {
                start = i + 1;
            }
            piece.push(c);
            if c == '{' && chars.get(k + 1) == Some(&'{') {
                depth += 1;
            } else if c == '}' && chars.get(k + 1) == Some(&'}') {
                depth = depth.saturating_sub(1);
            } else if c == '(' {
                parens += 1;
            } else if c == ')' {
                parens = parens.saturating_sub(1);
            }
            let next_blank = chars.get(k + 1).is_none_or(|n| n.is_whitespace());
            let abbreviation = piece.ends_with("e.g.") || piece.ends_with("i.e.");
            if matches!(c, '.' | ';' | '!' | '?')
                && next_blank
                && depth == 0
                && parens == 0
                && !abbreviation
            {
                flush(&mut piece, start, &mut out);
            }
        }
        piece.push(' ');
    }
    flush(&mut piece, start, &mut out);
    out
}

/// `s` without its `{{references}}` and `code spans` (names of files, columns and keys).
fn words_of(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("{{") {
        out.push_str(&rest[..i]);
        rest = rest[i..].find("}}").map_or("", |j| &rest[i + j + 2..]);
    }
    out.push_str(rest);
    out.split('`')
        .step_by(2)
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

#[test]
fn every_comparison_in_the_findings_cites_a_claim() {
    let mut uncited = Vec::new();
    let mut paths: Vec<_> = std::fs::read_dir("sims/findings")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    paths.sort();
    for path in paths {
        let text = std::fs::read_to_string(&path).unwrap();
        for (line, s) in sentences(&text) {
            let words = words_of(&s);
            let word = words
                .split(|c: char| !c.is_alphanumeric())
                .find(|w| COMPARATIVE.contains(w));
            if let Some(w) = word {
                if !s.contains("{{claim ") {
                    let short: String = s.trim().chars().take(120).collect();
                    uncited.push(format!("{}:{line}: \"{w}\": {short}", path.display()));
                }
            }
        }
    }
    assert!(
        uncited.is_empty(),
        "{} sentences of the findings compare without citing a claim ({{{{claim EXP/ID}}}}):\n{}",
        uncited.len(),
        uncited.join("\n")
    );
}

#[test]
fn every_committed_claim_holds_and_is_fresh() {
    use dptune::sim::study::Profile;
    use dptune::sim::{claims, experiment};
    let mut files: Vec<_> = ["sims", "sims/gpu"]
        .iter()
        .flat_map(|d| std::fs::read_dir(d).unwrap().map(|e| e.unwrap().path()))
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    let mut problems = Vec::new();
    let mut count = 0;
    for file in files {
        let exp = experiment::load(&file, Profile::Paper).unwrap();
        if exp.claims.is_empty() {
            continue;
        }
        let dir = Path::new("results").join(&exp.name);
        if !dir.join("manifest.json").exists() {
            problems.push(format!(
                "{}: claims but no committed results",
                file.display()
            ));
            continue;
        }
        let (verdicts, failures) =
            claims::evaluate_all(&exp.claims, &dir, exp.study.output(), &exp.name).unwrap();
        count += verdicts.len();
        for (i, why) in failures {
            problems.push(format!("{} claims[{i}]: {why}", file.display()));
        }
        let md = claims::grid(&verdicts, &exp.name, Profile::Paper).markdown();
        let committed = std::fs::read_to_string(dir.join("claims.md")).unwrap_or_default();
        if md != committed {
            problems.push(format!(
                "{}: claims.md is not its claims evaluated afresh: run `dptune sim report {}`",
                dir.display(),
                file.display()
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(count >= 100, "only {count} claims declared");
}
