//! Resolving tool paths against the project root, and the confinement
//! check: a path outside the root needs approval.

use std::io;

use camino::{Utf8Component, Utf8Path, Utf8PathBuf};
use eonyx_core::ToolName;

use super::{ApprovalKind, CallEnv, Decision, ToolError, approve, approve_read};

/// A path a tool may touch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// Absolute, with `.`, `..` and symlinks resolved (as far as the path
    /// exists; a missing tail is normalized lexically).
    pub path: Utf8PathBuf,
    /// The project root, resolved the same way.
    pub root: Utf8PathBuf,
    /// Whether `path` is the root or lies under it.
    pub inside: bool,
    /// Whether `path` exists.
    pub exists: bool,
}

impl Resolved {
    /// The path as shown in output: relative to the root when inside.
    pub fn display(&self) -> String {
        display_path(&self.root, &self.path)
    }
}

/// Resolves `raw` (relative to `project_root` unless absolute; `~/` means
/// the home directory; empty means the root) and says whether it stays
/// inside the project after `..` and symlinks are followed.
pub fn resolve_path(project_root: &Utf8Path, raw: &str) -> Result<Resolved, ToolError> {
    let root = project_root
        .canonicalize_utf8()
        .map_err(|e| ToolError::io("cannot resolve the project root", project_root.as_str(), e))?;
    let raw = raw.trim();
    let joined = if raw.is_empty() || raw == "." {
        root.clone()
    } else if let Some(rest) = raw.strip_prefix("~/").or((raw == "~").then_some("")) {
        match std::env::var("HOME") {
            Ok(home) => Utf8PathBuf::from(home).join(rest),
            Err(_) => root.join(raw),
        }
    } else {
        root.join(raw)
    };

    let mut cur = Utf8PathBuf::from("/");
    let mut exists = true;
    for comp in joined.components() {
        match comp {
            Utf8Component::Prefix(p) => cur = Utf8PathBuf::from(p.as_str()),
            Utf8Component::RootDir => cur.push(comp.as_str()),
            Utf8Component::CurDir => {}
            Utf8Component::ParentDir => {
                // `cur` has no symlinks in its existing part, so its parent
                // is the real parent.
                cur.pop();
            }
            Utf8Component::Normal(name) => {
                let next = cur.join(name);
                if exists {
                    match next.symlink_metadata() {
                        Ok(_) => {
                            cur = match next.canonicalize_utf8() {
                                Ok(real) => real,
                                // A dangling symlink: judge it by where it points.
                                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                                    exists = false;
                                    dangling_target(&next).unwrap_or(next)
                                }
                                Err(e) => return Err(ToolError::io("cannot resolve", raw, e)),
                            };
                        }
                        Err(e) if e.kind() == io::ErrorKind::NotFound => {
                            exists = false;
                            cur = next;
                        }
                        Err(e) => return Err(ToolError::io("cannot resolve", raw, e)),
                    }
                } else {
                    cur = next;
                }
            }
        }
    }
    let inside = cur.starts_with(&root);
    Ok(Resolved {
        path: cur,
        root,
        inside,
        exists,
    })
}

/// Where a dangling symlink points, made absolute and normalized lexically.
fn dangling_target(link: &Utf8Path) -> Option<Utf8PathBuf> {
    let target = link.read_link_utf8().ok()?;
    let base = link.parent()?;
    let mut out = Utf8PathBuf::new();
    for comp in base.join(target).components() {
        match comp {
            Utf8Component::ParentDir => {
                out.pop();
            }
            Utf8Component::CurDir => {}
            c => out.push(c.as_str()),
        }
    }
    Some(out)
}

/// Resolves `raw` against the project root and, when it lies outside, asks
/// for approval on behalf of `tool`; inside, only a permission rule can
/// deny (or ask) it (`deny read(GLOB)`, docs/tools.md#permission-rules).
pub(crate) async fn resolve_approved(
    tool: ToolName,
    raw: &str,
    env: CallEnv<'_>,
) -> Result<Resolved, ToolError> {
    let resolved = resolve_path(&env.ctx.project_root, raw)?;
    if !resolved.inside {
        let kind = ApprovalKind::OutsideProject {
            tool,
            path: resolved.path.clone(),
        };
        if approve(env.approver, &kind, env.cancel).await? == Decision::Deny {
            if let Some(denial) = env.approver.rule_denial(&kind) {
                return Err(ToolError::Denied(denial));
            }
            return Err(ToolError::Denied(format!(
                "denied: {} is outside the project root {}; paths outside the project need \
                 approval (run eonyx with --allow-shell or set tools.shell = \"allow\"); use a \
                 path inside the project instead",
                resolved.path, resolved.root
            )));
        }
    } else {
        let kind = ApprovalKind::Read {
            tool,
            path: resolved.path.clone(),
        };
        if approve_read(env.approver, &kind, env.cancel).await? == Decision::Deny {
            return Err(ToolError::Denied(
                env.approver.rule_denial(&kind).unwrap_or_else(|| {
                    format!(
                        "denied: the user did not allow reading {} (a permission rule asks before it is read)",
                        resolved.display()
                    )
                }),
            ));
        }
    }
    Ok(resolved)
}

/// A path for output: relative to the project root when inside it.
pub fn display_path(root: &Utf8Path, path: &Utf8Path) -> String {
    match path.strip_prefix(root) {
        Ok(rel) if rel.as_str().is_empty() => ".".to_owned(),
        Ok(rel) => rel.to_string(),
        Err(_) => path.to_string(),
    }
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, Utf8PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let base = Utf8PathBuf::from_path_buf(dir.path().canonicalize().unwrap()).unwrap();
        std::fs::create_dir_all(base.join("project/src")).unwrap();
        std::fs::write(base.join("project/src/lib.rs"), "").unwrap();
        std::fs::write(base.join("secret.txt"), "").unwrap();
        (dir, base)
    }

    #[test]
    fn relative_paths_are_under_the_root() {
        let (_d, base) = setup();
        let root = base.join("project");
        let r = resolve_path(&root, "src/lib.rs").unwrap();
        assert_eq!(r.path, root.join("src/lib.rs"));
        assert!(r.inside && r.exists);
        assert_eq!(r.display(), "src/lib.rs");
        let r = resolve_path(&root, "").unwrap();
        assert_eq!(r.display(), ".");
        assert!(r.inside);
        let r = resolve_path(&root, "src/../new/file.txt").unwrap();
        assert_eq!(r.path, root.join("new/file.txt"));
        assert!(r.inside && !r.exists);
    }

    #[test]
    fn dotdot_escapes_are_outside() {
        let (_d, base) = setup();
        let root = base.join("project");
        let r = resolve_path(&root, "../secret.txt").unwrap();
        assert_eq!(r.path, base.join("secret.txt"));
        assert!(!r.inside);
        let r = resolve_path(&root, "src/../../secret.txt").unwrap();
        assert!(!r.inside);
        let r = resolve_path(&root, "missing/../../../x").unwrap();
        assert!(!r.inside);
        // A sibling whose name starts like the root is still outside.
        std::fs::create_dir(base.join("project-other")).unwrap();
        let r = resolve_path(&root, "../project-other").unwrap();
        assert!(!r.inside);
        let r = resolve_path(&root, base.join("secret.txt").as_str()).unwrap();
        assert!(!r.inside);
    }

    #[test]
    fn symlink_escapes_are_outside() {
        let (_d, base) = setup();
        let root = base.join("project");
        std::os::unix::fs::symlink(&base, root.join("up")).unwrap();
        std::os::unix::fs::symlink(base.join("secret.txt"), root.join("link.txt")).unwrap();
        std::os::unix::fs::symlink("../nowhere", root.join("dangling")).unwrap();
        std::os::unix::fs::symlink("src", root.join("inner")).unwrap();
        assert!(!resolve_path(&root, "up/secret.txt").unwrap().inside);
        assert!(!resolve_path(&root, "link.txt").unwrap().inside);
        assert!(!resolve_path(&root, "dangling").unwrap().inside);
        // `..` after a symlink is taken from the link's target.
        assert!(
            !resolve_path(&root, "inner/../../secret.txt")
                .unwrap()
                .inside
        );
        let r = resolve_path(&root, "inner/lib.rs").unwrap();
        assert!(r.inside);
        assert_eq!(r.path, root.join("src/lib.rs"));
    }

    #[test]
    fn a_root_given_through_a_symlink_still_contains_its_files() {
        let (_d, base) = setup();
        std::os::unix::fs::symlink(base.join("project"), base.join("alias")).unwrap();
        let r = resolve_path(&base.join("alias"), "src/lib.rs").unwrap();
        assert!(r.inside);
        assert_eq!(r.display(), "src/lib.rs");
    }
}
