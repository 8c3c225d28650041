fn main() {
    let words: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(nanobragg::cli::run(&words));
}
