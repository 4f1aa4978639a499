//! Loading: read the global `config.toml` and the project's `eonyx.json`
//! (found by the walk up from the working directory), [`crate::parse`] and
//! [`crate::validate`] each, then resolve them (`resolve/`) into a [`Config`]
//! with a [`crate::Source`] for every resolved key. Loading never writes.

use camino::{Utf8Path, Utf8PathBuf};

use crate::parse::{parse_global, parse_project};
use crate::resolve::resolve;
use crate::{Config, ConfigError};

pub use crate::options::{
    GLOBAL_FILE, IMPLICIT_MODEL_KEY, LoadOptions, OPENAI_DEFAULT_BASE_URL, global_config_path,
};

fn read_optional(path: &Utf8Path) -> Result<Option<String>, ConfigError> {
    match std::fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes).map(Some).map_err(|e| {
            ConfigError::parse_at(
                path,
                &String::from_utf8_lossy(e.as_bytes()),
                e.utf8_error().valid_up_to(),
                "the file is not valid UTF-8",
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ConfigError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Load and merge every layer for `opts.cwd`.
pub fn load(opts: &LoadOptions) -> Result<Config, ConfigError> {
    let config_dir = crate::paths::config_dir(&opts.env)?;
    let project = crate::paths::find_project(&opts.cwd);
    let global_path = global_config_path(&config_dir);

    let global = match read_optional(&global_path)? {
        Some(text) => Some(parse_global(&text, &global_path)?),
        None => None,
    };
    let project_file = match &project.config_file {
        Some(path) => match read_optional(path)? {
            Some(text) => Some((path.clone(), parse_project(&text, path)?)),
            None => None,
        },
        None => None,
    };
    let mut cfg = resolve(
        opts,
        &config_dir,
        &project.root,
        global.map(|f| (global_path.clone(), f)),
        project_file,
    )?;
    // The rules eonyx saved for this project (`p` in the REPL): the user's
    // own, so they apply whatever the trust.
    if let Ok(data_dir) = crate::paths::data_dir(&opts.env) {
        let saved = crate::permissions::saved_path(&data_dir, &project.root);
        let rules = crate::permissions::saved_rules(&saved)?;
        cfg.tools.permissions.rules.extend(rules);
        cfg.permissions_file = Some(saved);
    }
    if !cfg.tools.permissions.is_empty() {
        // What the rules' globs are relative to (only set with rules, so
        // configs without any compare equal wherever they were loaded).
        cfg.tools.permissions.project_root = project.root.clone();
        cfg.tools.permissions.home = opts.env.get("HOME").map(Utf8PathBuf::from);
    }
    Ok(cfg)
}
