//! Arbitrary bytes through the config parse + validate path, as a global
//! `config.toml` and as a project `eonyx.json`, and through the trust edit.
//! Any input must give a config or a positioned error, never a panic.
#![no_main]

use camino::Utf8Path;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let toml_path = Utf8Path::new("/fuzz/config.toml");
    let json_path = Utf8Path::new("/fuzz/eonyx.json");
    if let Err(e) = eonyx_config::parse_global(&text, toml_path) {
        assert!(e.to_string().starts_with("/fuzz/config.toml"));
    }
    if let Err(e) = eonyx_config::parse_project(&text, json_path) {
        assert!(e.to_string().starts_with("/fuzz/eonyx.json"));
    }
    let _ =
        eonyx_config::trust::edit_trusted(&text, toml_path, Utf8Path::new("/fuzz/project"), false);
});
