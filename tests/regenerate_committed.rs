//! Issue 22: committed results regenerate byte for byte. Three experiments whose computation
//! uses no BLAS (pure accounting: their numbers cannot depend on which kernels a CPU gets) are
//! rerun at the paper profile, and every markdown and LaTeX table they write must equal the
//! committed file exactly, with their parquet tables equal value for value.
//! (Experiments that factorise matrices through OpenBLAS can differ in the last bits on
//! another CPU: see the README's "Reproducibility".)

mod common;

use dptune::sim::table::Table;
use dptune::sim::Profile;
use std::path::Path;

#[test]
fn committed_accounting_tables_regenerate_byte_for_byte() {
    for name in [
        "ps-fig2-rdp-by-order",
        "dw-table1-budgets",
        "ps-fig8-conditional-sampling",
    ] {
        let out = common::temp_dir(&format!("regen-{name}"));
        let file = Path::new("sims").join(format!("{name}.toml"));
        let fresh = common::run_and_report(&file, Profile::Paper, &out, 2);
        let committed = Path::new("results").join(name);
        let mut compared = 0;
        for entry in std::fs::read_dir(&committed).unwrap() {
            let path = entry.unwrap().path();
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
            let again = out.join(name).join(path.file_name().unwrap());
            match ext {
                "md" | "tex" => {
                    let (want, got) = (
                        std::fs::read(&path).unwrap(),
                        std::fs::read(&again).unwrap(),
                    );
                    assert!(want == got, "{} differs when regenerated", path.display());
                    compared += 1;
                }
                "parquet" => {
                    let want = Table::read_parquet(&path).unwrap();
                    assert_eq!(want, fresh, "{}", path.display());
                    compared += 1;
                }
                _ => {}
            }
        }
        assert!(compared >= 3, "{name}: only {compared} files compared");
    }
}
