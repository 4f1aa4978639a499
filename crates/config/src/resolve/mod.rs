//! The merge: parsed (and validated) files in, a [`Config`] with a
//! [`Source`] for every value out. [`resolve()`] runs the steps in order;
//! each step reads the layers (global, then project) and fills its part of
//! the config: trust, models ([`model`]), profile, the active model
//! ([`model`]), compaction, then the other tables.

use std::collections::BTreeSet;

use camino::{Utf8Path, Utf8PathBuf};

use crate::options::{LoadOptions, global_config_path};
use crate::paths::Env;
use crate::trust::is_trusted;
use crate::{CompactionConfig, CompactionFile, Config, ConfigError, ConfigFile, Source};
use eonyx_core::permissions::RuleOrigin;

mod mcp;
mod model;

/// A file that took part in the merge.
pub(crate) struct Layer {
    file: ConfigFile,
    source: Source,
}

pub(crate) fn file_source(src: &Source) -> Utf8PathBuf {
    match src {
        Source::Global { path } | Source::Project { path } => path.clone(),
        _ => Utf8PathBuf::new(),
    }
}

/// Merge already-parsed files. Split from [`crate::load()`] so the merge can be
/// tested without a filesystem (trust still canonicalizes `project_root`).
pub(crate) fn resolve(
    opts: &LoadOptions,
    config_dir: &Utf8Path,
    project_root: &Utf8Path,
    global: Option<(Utf8PathBuf, ConfigFile)>,
    project: Option<(Utf8PathBuf, ConfigFile)>,
) -> Result<Config, ConfigError> {
    let env = &opts.env;
    let mut cfg = Config::defaults(project_root, config_dir);
    let global_path = global_config_path(config_dir);
    let layers = trusted_layers(&mut cfg, project_root, global, project);
    let zero_config = model::resolve_models(&mut cfg, &layers, env);
    cfg.profiles = crate::profiles::resolve(
        layers.iter().map(|l| (&l.file, &l.source)),
        &mut cfg.sources,
    );
    let profile = resolve_profile(&mut cfg, opts, &global_path)?;
    let model_key =
        model::choose_active_model(&mut cfg, &layers, opts, &profile, zero_config, &global_path)?;
    resolve_compaction(&mut cfg, &layers, &model_key, &profile, env, &global_path)?;
    apply_tables(&mut cfg, &layers);
    mcp::resolve_mcp(&mut cfg, &layers)?;
    Ok(cfg)
}

/// The files in merge order (global, then project), with what an untrusted
/// project may not set already dropped; records the files and the trust.
fn trusted_layers(
    cfg: &mut Config,
    project_root: &Utf8Path,
    global: Option<(Utf8PathBuf, ConfigFile)>,
    project: Option<(Utf8PathBuf, ConfigFile)>,
) -> Vec<Layer> {
    cfg.global_file = global.as_ref().map(|(p, _)| p.clone());
    cfg.project_file = project.as_ref().map(|(p, _)| p.clone());

    let trusted_list = global
        .as_ref()
        .map(|(_, f)| f.trusted_projects.clone())
        .unwrap_or_default();
    cfg.trusted = is_trusted(project_root, &trusted_list);

    let global_models: BTreeSet<String> = global
        .as_ref()
        .map(|(_, f)| f.models.keys().cloned().collect())
        .unwrap_or_default();
    if let Some((path, file)) = &global
        && let Some(h) = &file.hooks
    {
        cfg.hooks.hooks.extend(crate::hooks::defs(h, path, true));
    }
    if let Some((path, file)) = &global
        && let Some(p) = &file.permissions
    {
        let rules = crate::permissions::rules_of(p, path, RuleOrigin::Global, true);
        cfg.tools.permissions.rules.extend(rules);
    }
    let mut layers = Vec::new();
    if let Some((path, file)) = global {
        layers.push(Layer {
            file,
            source: Source::Global { path },
        });
    }
    if let Some((path, mut file)) = project {
        if let Some(h) = &file.hooks {
            cfg.hooks
                .hooks
                .extend(crate::hooks::defs(h, &path, cfg.trusted));
        }
        if let Some(p) = file.permissions.take() {
            let rules = crate::permissions::rules_of(&p, &path, RuleOrigin::Project, cfg.trusted);
            let ignored = rules.iter().filter(|r| !r.active).count();
            if ignored > 0 {
                cfg.warnings.push(format!(
                    "{path}: its {ignored} `allow` permission rule(s) are ignored because the project is not trusted (its `deny` and `ask` rules apply); to use them, trust the project with `eonyx trust {project_root}`"
                ));
            }
            cfg.tools.permissions.rules.extend(rules);
        }
        if !cfg.trusted
            && let Some(h) = file.hooks.take()
            && h.count() > 0
        {
            cfg.warnings.push(format!(
                "{path}: its {} hook(s) do not run because the project is not trusted; to run them, trust the project with `eonyx trust {project_root}`",
                h.count()
            ));
        }
        apply_trust(
            &mut file,
            &path,
            project_root,
            cfg.trusted,
            &global_models,
            &mut cfg.warnings,
        );
        layers.push(Layer {
            file,
            source: Source::Project { path },
        });
    }
    layers
}

/// Drop what an untrusted project may not set (everything outside
/// [`crate::trust::UNTRUSTED_MAY_SET`]), named in one warning.
fn apply_trust(
    file: &mut ConfigFile,
    path: &Utf8Path,
    root: &Utf8Path,
    trusted: bool,
    global_models: &BTreeSet<String>,
    warnings: &mut Vec<String>,
) {
    if !file.trusted_projects.is_empty() {
        file.trusted_projects.clear();
        warnings.push(format!(
            "{path}: ignoring `trusted_projects`: only the global config.toml can trust projects"
        ));
    }
    if trusted {
        return;
    }
    let refused = crate::trust::restrict_untrusted(file, global_models);
    if !refused.is_empty() {
        let keys: Vec<String> = refused.iter().map(|k| format!("`{k}`")).collect();
        warnings.push(format!(
            "{path}: ignoring {} because the project is not trusted (an untrusted project may only tune compaction, context caps and limits, turn features off and tighten the sandbox); to allow them, trust the project with `eonyx trust {root}`",
            keys.join(", ")
        ));
    }
}

/// `--profile NAME` (or a task's profile), which must be built in or
/// defined in some layer.
fn resolve_profile(
    cfg: &mut Config,
    opts: &LoadOptions,
    global_path: &Utf8Path,
) -> Result<Option<String>, ConfigError> {
    let profile = match &opts.profile {
        Some(name) => {
            if !cfg.profiles.contains_key(name) {
                return Err(ConfigError::UnknownProfile {
                    name: name.clone(),
                    known: cfg.profiles.keys().cloned().collect::<Vec<_>>().join(", "),
                    config_file: global_path.to_path_buf(),
                });
            }
            cfg.sources.insert(
                "profile".into(),
                Source::Flag {
                    flag: "--profile".into(),
                },
            );
            Some(name.clone())
        }
        None => None,
    };
    cfg.profile = profile.clone();
    Ok(profile)
}

/// Compaction: global > project > model overrides > profile overrides > env;
/// `compaction.model` must name a configured model.
fn resolve_compaction(
    cfg: &mut Config,
    layers: &[Layer],
    model_key: &str,
    profile: &Option<String>,
    env: &Env,
    global_path: &Utf8Path,
) -> Result<(), ConfigError> {
    for l in layers {
        if let Some(c) = &l.file.compaction {
            apply_compaction(cfg, c, &l.source);
        }
    }
    for l in layers {
        if let Some(c) = l
            .file
            .models
            .get(model_key)
            .and_then(|m| m.compaction.as_ref())
        {
            let src = Source::Model {
                key: model_key.to_owned(),
                path: file_source(&l.source),
            };
            apply_compaction(cfg, c, &src);
        }
    }
    if let Some(p) = profile {
        if let Some(c) = crate::profiles::builtin_compaction(p) {
            let src = Source::Builtin { profile: p.clone() };
            apply_compaction(cfg, &c, &src);
        }
        for l in layers {
            if let Some(c) = l.file.profiles.get(p).and_then(|pf| pf.compaction.as_ref()) {
                let src = Source::Profile {
                    name: p.clone(),
                    path: file_source(&l.source),
                };
                apply_compaction(cfg, c, &src);
            }
        }
    }
    apply_compaction_env(cfg, env)?;
    check_ahead(cfg);
    if !cfg.compaction.model.is_empty() && !cfg.models.contains_key(&cfg.compaction.model) {
        let src = cfg.source("compaction.model");
        return Err(ConfigError::Invalid {
            path: match src {
                Source::Global { path }
                | Source::Project { path }
                | Source::Model { path, .. }
                | Source::Profile { path, .. } => path,
                _ => global_path.to_path_buf(),
            },
            key: "compaction.model".into(),
            message: format!(
                "no model `{}` is configured; known models: {}",
                cfg.compaction.model,
                cfg.models.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
        });
    }
    Ok(())
}

/// An `ahead_percent` from one layer that is not below the
/// `threshold_percent` another layer set (each file's own pair is checked
/// when it is read): the derived default is used, with a warning.
fn check_ahead(cfg: &mut Config) {
    let c = &mut cfg.compaction;
    let Some(a) = c.ahead_percent.filter(|a| *a > 0.0) else {
        return;
    };
    if a < c.threshold_percent {
        return;
    }
    c.ahead_percent = None;
    let derived = c.ahead_percent();
    let (a_src, t_src) = (
        cfg.source("compaction.ahead_percent"),
        cfg.source("compaction.threshold_percent"),
    );
    cfg.sources.remove("compaction.ahead_percent");
    cfg.warnings.push(format!(
        "compaction.ahead_percent = {a} ({a_src}) is not below compaction.threshold_percent = {} ({t_src}); using the default, {derived}",
        cfg.compaction.threshold_percent
    ));
}

/// Apply one `[compaction]` table field by field.
fn apply_compaction(cfg: &mut Config, f: &CompactionFile, src: &Source) {
    let c: &mut CompactionConfig = &mut cfg.compaction;
    let mut set = Vec::new();
    macro_rules! take {
        ($($field:ident),*) => {$(
            if let Some(v) = f.$field.clone() {
                c.$field = v;
                set.push(stringify!($field));
            }
        )*};
    }
    take!(
        auto,
        prune,
        threshold_percent,
        buffer_tokens,
        keep_turns,
        keep_tokens,
        summary_max_tokens,
        chars_per_token,
        image_tokens,
        tool_result_budget_chars,
        keep_recent_results,
        max_consecutive,
        model
    );
    if let Some(t) = f.temperature {
        c.temperature = Some(t);
        set.push("temperature");
    }
    if let Some(a) = f.ahead_percent {
        c.ahead_percent = Some(a);
        set.push("ahead_percent");
    }
    if let Some(e) = f.reasoning_effort {
        c.reasoning_effort = e;
        set.push("reasoning_effort");
    }
    if let Some(n) = f.native {
        c.native = n;
        set.push("native");
    }
    if let Some(t) = f.user_words_tokens {
        c.user_words_tokens = Some(t);
        set.push("user_words_tokens");
    }
    for field in set {
        cfg.sources
            .insert(format!("compaction.{field}"), src.clone());
    }
}

fn apply_compaction_env(cfg: &mut Config, env: &Env) -> Result<(), ConfigError> {
    let env_src = |var: &str| Source::Env { var: var.into() };
    if let Some(v) = env.get("EONYX_AUTO_COMPACT") {
        let auto = match v.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" => true,
            "false" | "0" | "no" | "off" => false,
            _ => {
                return Err(ConfigError::Env {
                    var: "EONYX_AUTO_COMPACT".into(),
                    value: v.to_owned(),
                    message: "use true or false".into(),
                });
            }
        };
        cfg.compaction.auto = auto;
        cfg.sources
            .insert("compaction.auto".into(), env_src("EONYX_AUTO_COMPACT"));
    }
    let number = |var: &str, v: &str| {
        v.trim().parse::<u64>().map_err(|_| ConfigError::Env {
            var: var.into(),
            value: v.to_owned(),
            message: "use a whole number of tokens, e.g. 50000".into(),
        })
    };
    if let Some(v) = env.get("EONYX_AUTO_COMPACT_TOKENS") {
        cfg.compaction.trigger_tokens_override = Some(number("EONYX_AUTO_COMPACT_TOKENS", v)?);
        cfg.sources.insert(
            "compaction.trigger_tokens_override".into(),
            env_src("EONYX_AUTO_COMPACT_TOKENS"),
        );
    }
    if let Some(v) = env.get("EONYX_COMPACTION_RESERVED_TOKENS") {
        cfg.compaction.buffer_tokens = number("EONYX_COMPACTION_RESERVED_TOKENS", v)?;
        cfg.sources.insert(
            "compaction.buffer_tokens".into(),
            env_src("EONYX_COMPACTION_RESERVED_TOKENS"),
        );
    }
    Ok(())
}

/// context, tools, tasks, memory, repl, max_steps, skills: project over
/// global.
fn apply_tables(cfg: &mut Config, layers: &[Layer]) {
    for l in layers {
        let f = &l.file;
        let mut set = |key: &str| {
            cfg.sources.insert(key.to_owned(), l.source.clone());
        };
        if let Some(c) = &f.context {
            if let Some(v) = c.max_file_bytes {
                cfg.context.max_file_bytes = v;
                set("context.max_file_bytes");
            }
            if let Some(v) = c.max_total_bytes {
                cfg.context.max_total_bytes = v;
                set("context.max_total_bytes");
            }
        }
        if let Some(t) = &f.tools {
            if let Some(v) = t.shell {
                cfg.tools.shell = v;
                set("tools.shell");
            }
            if let Some(v) = t.output_cap_bytes {
                cfg.tools.output_cap_bytes = v;
                set("tools.output_cap_bytes");
            }
            if let Some(v) = t.shell_timeout_secs {
                cfg.tools.shell_timeout_secs = v;
                set("tools.shell_timeout_secs");
            }
            if let Some(v) = t.write {
                cfg.tools.write = v;
                set("tools.write");
            }
            if let Some(v) = t.max_edit_bytes {
                cfg.tools.max_edit_bytes = v;
                set("tools.max_edit_bytes");
            }
            if let Some(v) = t.max_jobs {
                cfg.tools.max_jobs = v;
                set("tools.max_jobs");
            }
            if let Some(v) = t.job_log_max_bytes {
                cfg.tools.job_log_max_bytes = v;
                set("tools.job_log_max_bytes");
            }
            if let Some(v) = t.recall {
                cfg.tools.recall = v;
                set("tools.recall");
            }
            let sb = &mut cfg.tools.sandbox;
            if let Some(v) = t.sandbox {
                sb.mode = v;
                set("tools.sandbox");
            }
            if let Some(v) = t.sandbox_backend {
                sb.backend = v;
                set("tools.sandbox_backend");
            }
            if let Some(v) = &t.sandbox_writable {
                sb.writable = v.iter().map(Utf8PathBuf::from).collect();
                set("tools.sandbox_writable");
            }
            if let Some(v) = t.sandbox_network {
                sb.network = v;
                set("tools.sandbox_network");
            }
            if let Some(v) = t.sandbox_required {
                sb.required = v;
                set("tools.sandbox_required");
            }
            if let Some(v) = t.max_image_bytes {
                cfg.tools.max_image_bytes = v;
                set("tools.max_image_bytes");
            }
            if let Some(v) = t.task {
                cfg.tools.task = v;
                set("tools.task");
            }
            let web = &mut cfg.tools.web;
            if let Some(v) = t.web_fetch {
                // An untrusted project may only tighten (trust.rs lets
                // through "ask" and "deny"; "ask" over "deny" is looser).
                let untrusted = matches!(l.source, Source::Project { .. }) && !cfg.trusted;
                if untrusted && v > web.policy {
                    cfg.warnings.push(format!(
                        "{}: ignoring `tools.web_fetch = \"{}\"`: it is looser than \"{}\" and the project is not trusted",
                        file_source(&l.source),
                        v.as_str(),
                        web.policy.as_str()
                    ));
                } else {
                    web.policy = v;
                    set("tools.web_fetch");
                }
            }
            if let Some(v) = t.web_fetch_max_bytes {
                web.max_bytes = v;
                set("tools.web_fetch_max_bytes");
            }
            if let Some(v) = t.web_fetch_timeout_secs {
                web.timeout_secs = v;
                set("tools.web_fetch_timeout_secs");
            }
            if let Some(v) = &t.web_fetch_domains {
                web.domains = v.clone();
                set("tools.web_fetch_domains");
            }
            if let Some(v) = &t.web_fetch_private_hosts {
                web.private_hosts = v.clone();
                set("tools.web_fetch_private_hosts");
            }
        }
        if let Some(t) = &f.tasks {
            if let Some(v) = t.max_depth {
                cfg.tasks.max_depth = v;
                set("tasks.max_depth");
            }
            if let Some(v) = t.max_parallel {
                cfg.tasks.max_parallel = v;
                set("tasks.max_parallel");
            }
        }
        if let Some(g) = &f.goals
            && let Some(v) = g.max_turns
        {
            cfg.goals.max_turns = v;
            set("goals.max_turns");
        }
        if let Some(m) = &f.memory {
            if let Some(v) = m.enabled {
                cfg.memory.enabled = v;
                set("memory.enabled");
            }
            if let Some(v) = m.max_bytes {
                cfg.memory.max_bytes = v;
                set("memory.max_bytes");
            }
            if let Some(v) = m.mine {
                cfg.memory.mine = v;
                set("memory.mine");
            }
            if let Some(v) = m.mine_idle_hours {
                cfg.memory.mine_idle_hours = v;
                set("memory.mine_idle_hours");
            }
            if let Some(v) = m.mine_min_user_messages {
                cfg.memory.mine_min_user_messages = v;
                set("memory.mine_min_user_messages");
            }
            if let Some(v) = m.mine_per_start {
                cfg.memory.mine_per_start = v;
                set("memory.mine_per_start");
            }
            if let Some(v) = &m.mine_model {
                cfg.memory.mine_model = v.clone();
                set("memory.mine_model");
            }
            if let Some(v) = m.mine_budget_tokens {
                cfg.memory.mine_budget_tokens = v;
                set("memory.mine_budget_tokens");
            }
        }
        if let Some(r) = &f.repl {
            if let Some(v) = r.edit_mode {
                cfg.repl.edit_mode = v;
                set("repl.edit_mode");
            }
            // Any layer can turn history off; none turns it back on.
            if let Some(v) = r.history
                && cfg.repl.history
            {
                cfg.repl.history = v;
                set("repl.history");
            }
            if let Some(v) = r.history_size {
                cfg.repl.history_size = v;
                set("repl.history_size");
            }
        }
        if let Some(v) = f.ui.as_ref().and_then(|u| u.reasoning) {
            cfg.ui.reasoning = v;
            set("ui.reasoning");
        }
        if let Some(v) = f.max_steps {
            cfg.max_steps = v;
            set("max_steps");
        }
        if let Some(k) = &f.skills {
            if let Some(v) = k.max_listed_bytes {
                cfg.skills.max_listed_bytes = v;
                set("skills.max_listed_bytes");
            }
            if let Some(v) = k.max_reloaded_bytes {
                cfg.skills.max_reloaded_bytes = v;
                set("skills.max_reloaded_bytes");
            }
        }
    }
}
