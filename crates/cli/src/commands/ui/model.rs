//! `/model [KEY] [EFFORT]`: show the session's model and reasoning effort,
//! or switch them for the rest of the session (docs/models.md, section "Reasoning
//! models and the Responses API").

use eonyx_agent::Agent;

use super::View;
use super::outcome::{Slash, ended};

pub async fn model(agent: &mut Agent, view: &mut View<'_>, args: &str) -> Slash {
    let switch = match agent.parse_model_args(args) {
        Ok(s) => s,
        Err(e) => return Slash::Declined(e.to_string()),
    };
    if switch.key.is_none() && switch.effort.is_none() {
        let info = agent.model_info();
        view.printer.info(&info.to_string());
        view.printer
            .info(&format!("models: {}", info.keys.join(", ")));
        return Slash::Continue;
    }
    match agent.switch_model(&switch).await {
        Ok(info) => {
            for n in agent.take_startup_notices() {
                view.printer.warn(&n);
            }
            view.printer.info(&format!("switched: {info}"));
            Slash::Continue
        }
        Err(e) => ended(e),
    }
}
