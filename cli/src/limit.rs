//! `ratelock limit hit|peek KEY RULES [--cost N]`: one decision, printed; exits 0 when allowed, 1 when
//! denied.

use ratelock::{Limiter, LimiterOptions, Store, StoreOptions};

use crate::args::{LimitArgs, StoreArgs};
use crate::exit::Exit;
use crate::output::{self, decision_json, decision_line};
use crate::store_url;

/// The limiter of the command line's store options.
pub async fn limiter(store: &StoreArgs) -> Result<Limiter, Exit> {
    let options = StoreOptions::default().with_timeout(store.timeout);
    let connected = Store::connect(&store.url, &options)
        .await
        .map_err(store_url::failed_at(&store.url))?;
    store_url::require_shared(connected.does_io(), &store.url)?;
    Ok(Limiter::with_store(
        connected,
        LimiterOptions::default().with_prefix(store.prefix.clone()),
    )?)
}

pub async fn run(store: &StoreArgs, args: LimitArgs, spend: bool, json: bool) -> Result<i32, Exit> {
    let limiter = limiter(store).await?;
    let rules = limiter.rules(&args.rules)?;
    let decision = limiter
        .check(&args.key, &rules, args.cost, spend, None)
        .await
        .map_err(store_url::failed_at(&store.url))?;
    if json {
        output::line(&decision_json(&decision, &rules).to_string())?;
    } else {
        output::line(&decision_line(&decision, &rules))?;
    }
    Ok(if decision.allowed { 0 } else { 1 })
}
