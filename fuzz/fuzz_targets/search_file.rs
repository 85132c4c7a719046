#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| dptune::fuzzing::search_file(data));
