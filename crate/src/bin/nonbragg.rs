//! upstream nonBragg: amorphous scattering from a .stol table (see `nanobragg::nonbragg`).
fn main() {
    let words: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(nanobragg::nonbragg::cli::run(&words));
}
