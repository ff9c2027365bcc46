//! Termination signals: SIGINT (Ctrl-C), SIGTERM (what `timeout`, CI runners, Docker and
//! Kubernetes send) and SIGHUP (a closed terminal) all mean "stop now, cleanly": finished
//! items are already stored, browsers are killed when their handles drop, and profile
//! directories are removed with them.

use tokio::signal::unix::{signal, SignalKind};

/// Resolves when the process receives SIGINT, SIGTERM or SIGHUP, with the signal's name.
/// If a handler cannot be installed, that signal is simply not waited for.
pub async fn terminated() -> &'static str {
    let wait = |kind: SignalKind| async move {
        match signal(kind) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = wait(SignalKind::interrupt()) => "SIGINT",
        _ = wait(SignalKind::terminate()) => "SIGTERM",
        _ = wait(SignalKind::hangup()) => "SIGHUP",
    }
}
