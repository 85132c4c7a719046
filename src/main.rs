fn main() {
    std::process::exit(dptune::cli::run(std::env::args_os()));
}
