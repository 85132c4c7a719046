#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| dptune::fuzzing::experiment_file(data));
