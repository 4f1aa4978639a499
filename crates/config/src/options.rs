//! What loading takes and where it looks: [`LoadOptions`], the global
//! file's place and the implicit model. Its own module so that loading
//! (`load`), the merge (`resolve/`) and `trust` all depend on it one way.

use camino::{Utf8Path, Utf8PathBuf};

use crate::paths::Env;

/// File name of the global config inside the config dir.
pub const GLOBAL_FILE: &str = "config.toml";

/// Default base URL of the zero-config model.
pub const OPENAI_DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// Key of the implicit model used when no model is configured.
pub const IMPLICIT_MODEL_KEY: &str = "default";

/// Inputs of [`crate::load::load`].
#[derive(Debug, Clone)]
pub struct LoadOptions {
    pub cwd: Utf8PathBuf,
    pub env: Env,
    /// `--model KEY`.
    pub model: Option<String>,
    /// `--profile NAME`.
    pub profile: Option<String>,
}

/// Path of the global config file for a config dir.
pub fn global_config_path(config_dir: &Utf8Path) -> Utf8PathBuf {
    config_dir.join(GLOBAL_FILE)
}
