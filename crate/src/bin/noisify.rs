//! upstream noisify: detector effects on a float image (see `nanobragg::noisify`).
fn main() {
    let words: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(nanobragg::noisify::cli::run(&words));
}
