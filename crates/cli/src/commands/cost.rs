//! What sessions cost, for `eonyx sessions --json` (docs/sessions.md, section
//! "Cost"): every session's own cost from its replies' usage, added up
//! each session's chain of parents.

use std::collections::HashMap;

use eonyx_core::SessionId;
use eonyx_core::cost::Spend;
use eonyx_store::Store;

/// What each session and its tasks cost, by id, when some model has
/// pricing (`None`: no pricing, no cost). Reads every session's replies
/// for their usage; a session whose model has no pricing has no cost, nor
/// has any session above it.
pub fn costs(
    store: &Store,
    config: &eonyx_config::Config,
) -> anyhow::Result<Option<HashMap<String, Option<f64>>>> {
    let priced =
        config.model.pricing.is_some() || config.models.values().any(|m| m.pricing.is_some());
    if !priced {
        return Ok(None);
    }
    let listing = store.listing()?;
    let parents: HashMap<&str, Option<&str>> = listing.rows().map(|r| (r.id, r.parent)).collect();
    let mut totals: HashMap<&str, Spend> = HashMap::new();
    for r in listing.rows() {
        let id = SessionId::parse(r.id)?;
        let (model, requests, usage) = match eonyx_agent::cost::session_usage(store, &id) {
            Ok(u) => u,
            Err(e) if e.is_not_found() => continue,
            Err(e) => return Err(e.into()),
        };
        let mut own = Spend::default();
        own.add(
            eonyx_agent::cost::pricing_for(config, model.as_deref()),
            &usage,
        );
        if requests == 0 {
            // Its own model decides whether it has a cost; it adds nothing above.
            totals.entry(r.id).or_default().merge(own);
            continue;
        }
        // The session itself and every session above it.
        let mut at = Some(r.id);
        let mut depth = 0;
        while let Some(id) = at
            && depth <= parents.len()
        {
            totals.entry(id).or_default().merge(own);
            at = parents.get(id).copied().flatten();
            depth += 1;
        }
    }
    Ok(Some(
        listing
            .rows()
            .map(|r| {
                let usd = totals.get(r.id).map_or(Some(0.0), Spend::usd);
                (r.id.to_owned(), usd)
            })
            .collect(),
    ))
}
