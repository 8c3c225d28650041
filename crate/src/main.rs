fn main() {
    eprintln!("nanobragg: under construction");
    std::process::exit(2);
}
