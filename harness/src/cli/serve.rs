//! `faultline serve`: serves the fixture sites on loopback for inspection.

use super::ServeArgs;
use anyhow::{Context, Result};
use faultline_tasks::TaskKind;

pub(super) async fn serve(args: ServeArgs) -> Result<()> {
    // A person loads pages under scopes they choose (`inspect`, or any other): each
    // opens on its first event, within the same ledger limits as a run.
    let options = faultline_sites::ServerOptions {
        open_scopes_on_demand: true,
        ..faultline_sites::ServerOptions::default()
    };
    let (server, key) = faultline_sites::FixtureServer::start_with(args.bind, options)
        .await
        .with_context(|| format!("binding {}", args.bind))?;
    let base = server.base_url();
    println!("faultline fixture sites at {base}/");
    for task in TaskKind::ALL {
        for i in 0..args.layouts {
            let l = faultline_tasks::Layout::for_root(args.seed, task, i);
            println!(
                "  {base}/s/inspect/{task}?layout={i}&seed={}   {}",
                l.seed,
                l.instruction().text
            );
        }
    }
    println!(
        "ledgers: {base}/api/ledger/<scope> with header `Authorization: Bearer {}`",
        key.bearer_token()
    );
    println!("press Ctrl-C to stop");
    crate::signals::terminated().await;
    server.shutdown().await;
    Ok(())
}
