//! Reading and merging config files. (Placeholder until the config loader
//! lands: returns defaults.)

use camino::{Utf8Path, Utf8PathBuf};

use super::{Config, ConfigError};
use crate::paths::Env;

/// Inputs of [`load`].
#[derive(Debug, Clone)]
pub struct LoadOptions {
    pub cwd: Utf8PathBuf,
    pub env: Env,
    /// `--model KEY`.
    pub model: Option<String>,
    /// `--profile NAME`.
    pub profile: Option<String>,
}

/// Load and merge every layer for `opts.cwd`.
pub fn load(opts: &LoadOptions) -> Result<Config, ConfigError> {
    let config_dir = crate::paths::config_dir(&opts.env)?;
    let project = crate::paths::find_project(&opts.cwd);
    Ok(Config::defaults(&project.root, &config_dir))
}

#[allow(dead_code)]
fn _unused(_: &Utf8Path) {}
