//! Issue 38: the findings (`results/FINDINGS.md`) cite only what the committed tables say.
//! Every "m ± h" there must be a cell of a committed table (`results/<experiment>/*.md`)
//! rounded to the digits the findings print, so a regenerated table whose numbers move
//! fails this test until the findings follow; every `results/…` path they name must exist.

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
