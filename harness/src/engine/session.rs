//! A session: one fresh page under one fresh ledger scope, with the fault's site side
//! armed — the unit every trial, episode and recorder works in.
//!
//! The life of a session is always the same: a random scope, its ledger opened (the
//! server records a page's events only on an open scope); the fault's site injection
//! armed on it (before the page loads, so the first response is already faulty); a fresh
//! page from the pool (its own browser context); the task page loaded; then the round
//! trip, as many steps as the caller wants, with the ledger checkpointed between them;
//! finally the scope disarmed (its site events become the site witness), the ledger taken
//! and judged, and the page closed.
//!
//! [`Session`] is a guard. Whatever ends the work — a finished trial, an error at any
//! step, a panic, a cancelled task — the scope is disarmed, its ledger released and the
//! page closed. Trials, episodes and both recorders used to write that cleanup by hand,
//! each a little differently; now none of them can forget it.

use crate::agent::portable::SiteAddress;
use crate::engine::browser::Shot;
use crate::engine::cost::{Span, Stage, StageCosts};
use crate::engine::roundtrip::RoundTrip;
use crate::engine::Engine;
use anyhow::Result;
use faultline_faults::{FaultPlan, Witness};
use faultline_sites::{FixtureServer, Ledger, LedgerEvent, Scope, Truth};
use faultline_tasks::{Layout, Size};

/// One page under one ledger scope. See the module documentation.
pub struct Session<'e> {
    engine: &'e Engine,
    scope: Scope,
    /// The origin the session's pages load from: its page's (see [`TrialPage::origin`]).
    ///
    /// [`TrialPage::origin`]: crate::engine::browser::TrialPage::origin
    origin: String,
    layout: Layout,
    fault: Option<FaultPlan>,
    /// The round trip owns the page; `None` once the session is finished.
    rt: Option<RoundTrip>,
    /// Captures already noted in the ledger.
    noted_captures: usize,
    /// Ledger events already handed out by [`Session::peek`].
    seen_events: usize,
    /// Whether the scope has been disarmed and its ledger taken.
    settled: bool,
}

/// What a finished session leaves: the site witness (when the fault fired on the site),
/// the ledger and the truth judged from it.
pub struct Finished {
    /// What the fault's site side recorded (network and page faults), when it fired
    /// there, or what the DevTools proxy changed (protocol faults).
    pub site_witness: Option<Witness>,
    /// The scope's whole ledger.
    pub ledger: Ledger,
    /// The truth judged from the ledger: whether the task's outcome was achieved.
    pub truth: Truth,
    /// What the session cost, stage by stage (see [`crate::engine::cost`]).
    pub costs: StageCosts,
}

impl<'e> Session<'e> {
    /// Opens a fresh scope's ledger, arms the fault's site side on it, takes a fresh page
    /// and loads the task page. Observations are captured at `image` size.
    pub async fn open(
        engine: &'e Engine,
        layout: &Layout,
        fault: Option<FaultPlan>,
        image: Size,
    ) -> Result<Session<'e>> {
        let scope = Scope::random();
        let mut session = Session {
            engine,
            scope,
            origin: String::new(),
            layout: layout.clone(),
            fault,
            rt: None,
            noted_captures: 0,
            seen_events: 0,
            settled: false,
        };
        // Opened and armed before the page loads; from here on the guard disarms the scope
        // and takes (closes) its ledger whatever happens.
        engine.scorer.open(&session.scope);
        if let Some(injection) = fault.as_ref().and_then(|f| f.site(layout)) {
            engine.server.arm(&session.scope, injection);
        }
        let waiting = Span::start(Stage::Setup);
        let mut page = engine.take_page().await?;
        // Before the page loads, so that no capture of the session waits for it.
        page.render_for_screenshots(Shot::top(image)).await?;
        waiting.end(&mut page.costs);
        session.origin = page.origin().to_owned();
        let rt = session.rt.insert(
            RoundTrip::new(page, layout, fault, image, engine.timing)
                .with_site_probe({
                    let (server, scope) = (engine.server.clone(), session.scope.clone());
                    std::sync::Arc::new(move || server.in_flight(&scope) > 0)
                })
                .with_protocol(engine.browsers.protocol()),
        );
        let loading = Span::start(Stage::Navigation);
        rt.page
            .goto(&FixtureServer::page_url_on(
                &session.origin,
                &session.scope,
                layout,
            ))
            .await?;
        loading.end(&mut rt.page.costs);
        Ok(session)
    }

    /// Where this session's pages are served from, to keep it out of what an agent is
    /// told (see [`crate::agent::portable`]).
    pub fn site(&self) -> SiteAddress {
        SiteAddress::new(&self.origin, self.scope.as_str())
    }

    /// `policy`'s judgement of `evidence` gathered in this session, its message told as
    /// the agent reads it.
    pub fn judge(
        &self,
        policy: &dyn faultline_policies::VerificationPolicy,
        evidence: &faultline_policies::Evidence<'_>,
    ) -> faultline_policies::PolicyOutcome {
        crate::engine::judge::judge_one(&self.site(), policy, evidence)
    }

    /// The round trip over this session's page.
    pub fn rt(&mut self) -> &mut RoundTrip {
        self.rt
            .as_mut()
            .expect("a session has its page until it is finished")
    }

    /// What the session has cost so far, to add the caller's own stages to.
    pub fn costs(&mut self) -> &mut StageCosts {
        &mut self.rt().page.costs
    }

    /// Flushes the page's ledger requests, then notes in the ledger what the harness
    /// witnessed itself: every capture not yet noted and, when given, the agent's answer
    /// (judged against the newest capture).
    pub async fn record(&mut self, answer: Option<&str>) -> Result<()> {
        let (engine, scope) = (self.engine, &self.scope);
        let rt = self
            .rt
            .as_mut()
            .expect("a session has its page until it is finished");
        let span = Span::start(Stage::Scoring);
        // A page the armed fault crashed has nothing left to send (its keepalive
        // requests were handed to the browser before it died).
        if !rt.crashed_by_fault() {
            rt.page.flush_ledger().await?;
        }
        for m in &rt.marks[self.noted_captures..] {
            engine.scorer.note_capture(scope, m);
        }
        self.noted_captures = rt.marks.len();
        if let Some(a) = answer {
            engine.scorer.note_answer(scope, a, rt.last_capture());
        }
        span.end(&mut rt.page.costs);
        Ok(())
    }

    /// The ledger and truth of a trial that ends here while the page goes on serving the
    /// session's own (a rider on its capture timing): the page's events flushed and the
    /// captures so far noted, as [`Session::record`] does, then the ledger as it stands
    /// with `answer` judged against capture `capture`. Nothing but the captures is
    /// recorded in the scope.
    pub async fn score_ended_here(
        &mut self,
        answer: Option<&str>,
        capture: u64,
    ) -> Result<(Ledger, Truth)> {
        self.record(None).await?;
        let span = Span::start(Stage::Scoring);
        let scored =
            self.engine
                .scorer
                .score_ended_here(&self.scope, &self.layout, answer, capture);
        span.end(self.costs());
        scored
    }

    /// Judges the ledger as it stands (leaving it in place) and returns the events
    /// recorded since the last peek.
    pub fn peek(&mut self) -> (Truth, Vec<LedgerEvent>) {
        let (ledger, truth) = self.engine.scorer.peek(&self.scope, &self.layout);
        let new = ledger.events[self.seen_events.min(ledger.events.len())..].to_vec();
        self.seen_events = ledger.events.len();
        (truth, new)
    }

    /// Disarms the scope (its fault events become the site witness when one of them is
    /// the fault firing), takes and judges the ledger, and closes the page.
    pub fn finish(mut self) -> Result<Finished> {
        let span = Span::start(Stage::Scoring);
        let events = self.engine.server.disarm(&self.scope);
        self.settled = true;
        let (ledger, truth) = self.engine.scorer.score(&self.scope, &self.layout)?;
        let site_witness = self.fault.as_ref().and_then(|fault| {
            let first = events.iter().find(|e| e.fires)?;
            Some(Witness::new(
                fault.id(),
                format!("{}: {}", first.kind, first.data),
                serde_json::json!({ "site_events": events }),
            ))
        });
        // A fault on the protocol fired on the wire, not on the site: the proxy's record.
        let site_witness = site_witness.or_else(|| self.rt.as_mut()?.protocol_witness());
        let mut costs = self
            .rt
            .as_ref()
            .map(|rt| rt.page.costs.clone())
            .unwrap_or_default();
        span.end(&mut costs);
        Ok(Finished {
            site_witness,
            ledger,
            truth,
            costs,
        })
    }
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        if !self.settled {
            // Whatever ended the work, the scope keeps neither its arming nor its ledger.
            let _ = self.engine.server.disarm(&self.scope);
            let _ = self.engine.scorer.score(&self.scope, &self.layout);
        }
        if let Some(rt) = self.rt.take() {
            // Closing a context takes a few round trips; nothing waits for it.
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(rt.page.close());
            }
        }
    }
}
