//! `eonyx trust`: add (or remove) a project root in the global config's
//! `trusted_projects`, editing `config.toml` in place so its comments and
//! layout survive. The file is replaced atomically (temp file + rename).

use camino::{Utf8Path, Utf8PathBuf};

use super::ConfigError;
use super::load::{canonical_dir, global_config_path};

/// What [`trust_project`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrustChange {
    Added,
    AlreadyTrusted,
    Removed,
    /// `remove` was asked for a root that was not listed.
    NotListed,
}

/// Trust (or with `remove`, untrust) the project at `root`. The canonical
/// path is stored. Returns the canonical root and what changed.
pub fn trust_project(
    config_dir: &Utf8Path,
    root: &Utf8Path,
    remove: bool,
) -> Result<(Utf8PathBuf, TrustChange), ConfigError> {
    let canonical = match std::fs::canonicalize(root) {
        Ok(p) => Utf8PathBuf::from_path_buf(p)
            .map_err(|p| ConfigError::Path(crate::paths::PathError::NotUtf8(p)))?,
        // An untrust may name a directory that no longer exists.
        Err(_) if remove => root.to_path_buf(),
        Err(source) => {
            return Err(ConfigError::TrustPath {
                path: root.to_path_buf(),
                source,
            });
        }
    };
    if !remove && !canonical.is_dir() {
        return Err(ConfigError::TrustPath {
            path: root.to_path_buf(),
            source: std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory"),
        });
    }
    let path = global_config_path(config_dir);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(source) => return Err(ConfigError::Read { path, source }),
    };
    let (new_text, change) = edit_trusted(&text, &path, &canonical, remove)?;
    if matches!(change, TrustChange::Added | TrustChange::Removed) {
        write_atomic(&path, &new_text)?;
    }
    Ok((canonical, change))
}

/// The pure edit behind [`trust_project`].
pub fn edit_trusted(
    text: &str,
    path: &Utf8Path,
    root: &Utf8Path,
    remove: bool,
) -> Result<(String, TrustChange), ConfigError> {
    let mut doc = text.parse::<toml_edit::DocumentMut>().map_err(|e| {
        let (line, column) = super::load::line_col(text, e.span().map_or(0, |s| s.start));
        ConfigError::Parse {
            path: path.to_path_buf(),
            line,
            column,
            message: e.message().to_owned(),
        }
    })?;
    let not_array = || ConfigError::Invalid {
        path: path.to_path_buf(),
        key: "trusted_projects".into(),
        message: "must be an array of paths, e.g. trusted_projects = [\"/home/me/project\"]".into(),
    };
    let listed = |v: &toml_edit::Value| {
        v.as_str()
            .is_some_and(|s| canonical_dir(Utf8Path::new(s)) == root || s == root.as_str())
    };
    if !doc.contains_key("trusted_projects") {
        if remove {
            return Ok((text.to_owned(), TrustChange::NotListed));
        }
        let has_root_values = doc.iter().any(|(_, item)| item.is_value());
        let mut item = toml_edit::value(toml_edit::Array::new());
        if let Some(kv) = item.as_value_mut() {
            kv.decor_mut().clear();
        }
        doc.insert("trusted_projects", item);
        if let Some(mut key) = doc.key_mut("trusted_projects") {
            let prefix = if has_root_values { "\n" } else { "" };
            key.leaf_decor_mut().set_prefix(format!(
                "{prefix}# Projects whose eonyx.json may set base_url, api_key_env, tools.shell and tools.write\n"
            ));
        }
    }
    let array = doc
        .get_mut("trusted_projects")
        .and_then(|i| i.as_array_mut())
        .ok_or_else(not_array)?;
    let change = if remove {
        let before = array.len();
        array.retain(|v| !listed(v));
        if array.len() == before {
            TrustChange::NotListed
        } else {
            TrustChange::Removed
        }
    } else if array.iter().any(listed) {
        TrustChange::AlreadyTrusted
    } else {
        array.push(root.as_str());
        TrustChange::Added
    };
    Ok((doc.to_string(), change))
}

fn write_atomic(path: &Utf8Path, text: &str) -> Result<(), ConfigError> {
    let err = |source| ConfigError::Write {
        path: path.to_path_buf(),
        source,
    };
    let dir = path.parent().unwrap_or(Utf8Path::new("."));
    std::fs::create_dir_all(dir).map_err(err)?;
    let how = crate::fs::AtomicWrite {
        durable: true,
        private: true,
    };
    crate::fs::write_atomic(path, text.as_bytes(), how).map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utf8(p: &std::path::Path) -> Utf8PathBuf {
        Utf8PathBuf::from_path_buf(p.to_path_buf()).unwrap()
    }

    #[test]
    fn trust_appends_and_keeps_comments_and_layout() {
        let cfg = tempfile::tempdir().unwrap();
        let proj = tempfile::tempdir().unwrap();
        let cfg_dir = utf8(cfg.path());
        let original = "# my settings\nmodel = \"local\" # the default\n\n[models.local]\n# a local server\nbase_url = \"http://127.0.0.1:8080/v1\"\n";
        std::fs::write(cfg_dir.join("config.toml"), original).unwrap();

        let (root, change) = trust_project(&cfg_dir, &utf8(proj.path()), false).unwrap();
        assert_eq!(change, TrustChange::Added);
        let text = std::fs::read_to_string(cfg_dir.join("config.toml")).unwrap();
        assert!(text.starts_with("# my settings\nmodel = \"local\" # the default\n"));
        assert!(text.contains("# a local server\nbase_url"));
        // Still valid, and the root is now listed (so it lands before the
        // first table).
        let parsed = crate::config::parse_global(&text, &cfg_dir).unwrap();
        assert_eq!(parsed.trusted_projects, vec![root.to_string()]);

        let (_, again) = trust_project(&cfg_dir, &utf8(proj.path()), false).unwrap();
        assert_eq!(again, TrustChange::AlreadyTrusted);

        let (_, removed) = trust_project(&cfg_dir, &utf8(proj.path()), true).unwrap();
        assert_eq!(removed, TrustChange::Removed);
        let text = std::fs::read_to_string(cfg_dir.join("config.toml")).unwrap();
        let parsed = crate::config::parse_global(&text, &cfg_dir).unwrap();
        assert!(parsed.trusted_projects.is_empty());
        assert!(text.contains("# a local server"));
    }

    #[test]
    fn trust_creates_missing_config_and_rejects_missing_dir() {
        let cfg = tempfile::tempdir().unwrap();
        let proj = tempfile::tempdir().unwrap();
        let cfg_dir = utf8(cfg.path()).join("nested/eonyx");
        let (root, change) = trust_project(&cfg_dir, &utf8(proj.path()), false).unwrap();
        assert_eq!(change, TrustChange::Added);
        let text = std::fs::read_to_string(cfg_dir.join("config.toml")).unwrap();
        assert!(text.contains(root.as_str()), "{text}");

        let err = trust_project(&cfg_dir, &utf8(proj.path()).join("nope"), false).unwrap_err();
        assert!(err.to_string().contains("cannot trust"), "{err}");
    }

    #[test]
    fn trusted_projects_of_wrong_type_is_an_error_naming_the_key() {
        let err = edit_trusted(
            "trusted_projects = \"/x\"\n",
            Utf8Path::new("/c/config.toml"),
            Utf8Path::new("/p"),
            false,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "/c/config.toml: invalid value for `trusted_projects`: must be an array of paths, e.g. trusted_projects = [\"/home/me/project\"]"
        );
    }
}
