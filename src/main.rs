fn main() {
    pin_openblas_kernels();
    std::process::exit(dptune::cli::run(std::env::args_os()));
}

/// OpenBLAS picks its kernels per CPU when it loads (before `main`), and they round
/// differently, so results would depend on the machine. As the justfile does, dptune pins the
/// Haswell kernels (they run on every x86-64 CPU with AVX2 and FMA) and one BLAS thread: where
/// `OPENBLAS_CORETYPE` is unset, it sets both and starts itself again, so `cargo run` and the
/// bare binary give the same bits as `just`. A `OPENBLAS_CORETYPE` you set is kept.
fn pin_openblas_kernels() {
    #[cfg(all(unix, target_arch = "x86_64"))]
    {
        use std::os::unix::process::CommandExt;
        if std::env::var_os("OPENBLAS_CORETYPE").is_some()
            || !(std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma"))
        {
            return;
        }
        let Ok(exe) = std::env::current_exe() else {
            return;
        };
        let mut again = std::process::Command::new(exe);
        let mut args = std::env::args_os();
        if let Some(name) = args.next() {
            again.arg0(name);
        }
        again.args(args).env("OPENBLAS_CORETYPE", "Haswell");
        if std::env::var_os("OPENBLAS_NUM_THREADS").is_none() {
            again.env("OPENBLAS_NUM_THREADS", "1");
        }
        // `exec` returns only if it failed: then go on with the kernels OpenBLAS chose.
        let _ = again.exec();
    }
}
