//! Skills as slash commands where a surface offers them (ACP,
//! docs/acp.md#slash-commands): after the table's commands, one entry per
//! skill (a skill named like a command is reached through the model
//! only), and `/deploy staging` read as a user turn asking the model to
//! follow the skill.

use super::table::{Invocation, Parsed, Surface, offered, parse};
use crate::Agent;

/// One command as a surface offers it: a command of the table or a skill.
#[derive(Debug, Clone)]
pub struct Offered {
    pub name: String,
    pub description: String,
    pub hint: Option<String>,
    /// A skill, not a command of the table.
    pub skill: bool,
}

/// The commands of the table `surface` offers, then one per skill of
/// `agent`.
pub fn offered_with_skills(agent: &Agent, surface: Surface) -> Vec<Offered> {
    let mut out: Vec<Offered> = offered(surface)
        .map(|c| Offered {
            name: c.bare().to_owned(),
            description: c.help.to_owned(),
            hint: c.hint.map(str::to_owned),
            skill: false,
        })
        .collect();
    for skill in &agent.skills().skills {
        if out.iter().any(|o| o.name == skill.name) {
            continue;
        }
        out.push(Offered {
            name: skill.name.clone(),
            description: format!("skill: {}", skill.description),
            hint: Some("what to do".to_owned()),
            skill: true,
        });
    }
    out
}

/// How a prompt reads where skills are offered.
#[derive(Debug, Clone, Copy)]
pub enum Prompt<'l> {
    /// A command of the table.
    Command(Invocation<'l>),
    /// `/NAME ARGS` naming an offered skill: a user turn ([`skill_request`]).
    Skill { name: &'l str, args: &'l str },
    /// A user turn as written.
    Text,
}

/// Read `line` as `surface` does, `offered` the list it advertised
/// ([`offered_with_skills`]).
pub fn parse_prompt<'l>(line: &'l str, surface: Surface, offered: &[Offered]) -> Prompt<'l> {
    if let Parsed::Command(inv) = parse(line, surface) {
        return Prompt::Command(inv);
    }
    let Some(rest) = line.trim_start().strip_prefix('/') else {
        return Prompt::Text;
    };
    let (name, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    if offered.iter().any(|o| o.skill && o.name == name) {
        Prompt::Skill {
            name,
            args: args.trim(),
        }
    } else {
        Prompt::Text
    }
}

/// The user message of `/NAME ARGS` for skill `name`.
pub fn skill_request(name: &str, args: &str) -> String {
    let mut text = format!("Follow the skill `{name}` (load it with the skill tool).");
    if !args.is_empty() {
        text.push_str("\n\n");
        text.push_str(args);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offered() -> Vec<Offered> {
        vec![
            Offered {
                name: "deploy".to_owned(),
                description: "skill: ship it".to_owned(),
                hint: None,
                skill: true,
            },
            Offered {
                name: "status".to_owned(),
                description: String::new(),
                hint: None,
                skill: false,
            },
        ]
    }

    #[test]
    fn a_skill_name_reads_as_a_skill_with_its_arguments_and_commands_come_first() {
        let o = offered();
        assert!(matches!(
            parse_prompt("  /deploy   staging now ", Surface::Acp, &o),
            Prompt::Skill {
                name: "deploy",
                args: "staging now"
            }
        ));
        assert!(matches!(
            parse_prompt("/status", Surface::Acp, &o),
            Prompt::Command(_)
        ));
        assert!(matches!(
            parse_prompt("/nope x", Surface::Acp, &o),
            Prompt::Text
        ));
        assert!(matches!(
            parse_prompt("deploy", Surface::Acp, &o),
            Prompt::Text
        ));
    }

    #[test]
    fn the_request_names_the_skill_then_what_to_do() {
        assert_eq!(
            skill_request("deploy", "staging"),
            "Follow the skill `deploy` (load it with the skill tool).\n\nstaging"
        );
        assert_eq!(
            skill_request("deploy", ""),
            "Follow the skill `deploy` (load it with the skill tool)."
        );
    }
}
