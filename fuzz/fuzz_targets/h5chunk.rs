#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| nanobragg_fuzz::h5chunk(data));
