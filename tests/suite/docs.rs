//! Issue 38: the architecture page stays current: it names every top-level module of the
//! crate (as `name/` or `name.rs`).

#[test]
fn the_architecture_page_names_every_top_level_module() {
    let lib = std::fs::read_to_string("src/lib.rs").unwrap();
    let page = std::fs::read_to_string("docs/architecture.md").unwrap();
    let modules: Vec<&str> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("pub mod "))
        .map(|m| m.trim_end_matches(';'))
        .collect();
    assert!(modules.len() >= 15, "{modules:?}");
    let missing: Vec<&&str> = modules
        .iter()
        .filter(|m| !page.contains(&format!("{m}/")) && !page.contains(&format!("{m}.rs")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/architecture.md does not name {missing:?}"
    );
}
