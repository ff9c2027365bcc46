//! What an agent is told names nothing of the run it is told in.
//!
//! Every session serves its page from the fixture server's loopback origin
//! (`http://127.0.0.1:<port>`, a new port each run) under a random ledger scope
//! (`/s/<scope>/…`, a new one each session). Neither is about the page: a harness the
//! agent ran in would name the page by its path, `/search/results?q=…`. Yet a policy's
//! message quotes URLs (`generic`: "The page navigated to …"), and whatever reaches a
//! model's prompt is part of its cassette key: a run that says the port would never
//! replay in another run directory.
//!
//! So every text an agent is given passes through [`SiteAddress::relative`], which
//! removes the session's origin and scope prefix (and any temporary-file path, see
//! [`scrub_run_specifics`]), in one place: [`ask`], the only way the episode and the
//! recorder put a view to an agent, rewrites every text field of the [`AgentView`]
//! (a new field is a compile error there until it is handled). Policy messages are made
//! relative where they are judged as well (`plugin::policy`), so the stored message is
//! the one the agent read. The policies themselves still judge the absolute URLs.
//!
//! The cassette key is normalised with [`scrub_run_specifics`] too, by shape rather than
//! by this session's address, so a leak this module did not stop (or an old cassette
//! recorded before it) still replays.

use super::{Agent, AgentError, AgentReply, AgentView, HistoryEntry, PolicyFeedback};
use faultline_policies::Observation;
use faultline_tasks::Instruction;

/// Where a session's page is served from: the fixture server's origin and the scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteAddress {
    /// `http://127.0.0.1:<port>`, without a trailing slash.
    origin: String,
    /// `/s/<scope>`: the prefix every page of the session has.
    scope_prefix: String,
}

impl SiteAddress {
    /// The address of pages under `scope` on the server at `origin`.
    pub fn new(origin: &str, scope: &str) -> SiteAddress {
        SiteAddress {
            origin: origin.trim_end_matches('/').to_string(),
            scope_prefix: format!("/s/{scope}"),
        }
    }

    /// `text` with this session's URLs written as paths from the task's start
    /// (`http://127.0.0.1:4321/s/ab12/search/results?q=x` -> `/search/results?q=x`), then
    /// anything else that names the run removed ([`scrub_run_specifics`]).
    pub fn relative(&self, text: &str) -> String {
        let full = format!("{}{}", self.origin, self.scope_prefix);
        let mut out = text.to_string();
        for prefix in [full.as_str(), self.scope_prefix.as_str()] {
            out = strip_path_prefix(&out, prefix);
        }
        out = strip_path_prefix(&out, &self.origin);
        scrub_run_specifics(&out)
    }

    /// `feedback` with its message made [`relative`](Self::relative).
    pub fn feedback(&self, feedback: &PolicyFeedback) -> PolicyFeedback {
        PolicyFeedback {
            policy: feedback.policy.clone(),
            verdict: feedback.verdict,
            message: self.relative(&feedback.message),
        }
    }
}

/// `text` with every occurrence of `prefix` that starts a URL path removed: followed by
/// `/` it goes (the path stays), followed by `?`, `#` or the end of a token it becomes `/`
/// (the task's start itself). `…/s/ab12x/…` for the scope `ab12` is left alone.
fn strip_path_prefix(text: &str, prefix: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(prefix) {
        out.push_str(&rest[..at]);
        let after = &rest[at + prefix.len()..];
        match after.chars().next() {
            Some('/') => {}
            None => out.push('/'),
            Some(c) if c == '?' || c == '#' || !is_path_char(c) => out.push('/'),
            Some(_) => out.push_str(prefix),
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// Characters that continue a URL or a path (so a prefix followed by one is not whole).
fn is_path_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '~' | '%' | ':')
}

/// Loopback origins a fixture server listens on, up to the port.
const LOOPBACK_ORIGINS: [&str; 3] = ["http://127.0.0.1:", "http://localhost:", "http://[::1]:"];

/// `text` without what differs between runs, recognised by its shape: loopback origins
/// with a port (`http://127.0.0.1:<port>`), a ledger scope prefix starting a path
/// (`/s/<scope>/`), and paths under the temporary directory (`<temp>`). The defensive
/// half of [`SiteAddress::relative`], and the cassette key's normalisation.
pub fn scrub_run_specifics(text: &str) -> String {
    let mut out = text.to_string();
    for origin in LOOPBACK_ORIGINS {
        out = replace_tokens(&out, origin, |after| {
            let port = after.bytes().take_while(u8::is_ascii_digit).count();
            (port > 0).then_some((port, ""))
        });
    }
    out = replace_tokens(&out, "/s/", |after| {
        let id = after
            .bytes()
            .take_while(|b| {
                b.is_ascii_digit() || b.is_ascii_lowercase() || *b == b'-' || *b == b'_'
            })
            .count();
        ((1..=64).contains(&id) && after[id..].starts_with('/')).then_some((id, ""))
    });
    let temp = std::env::temp_dir();
    let temp = temp.to_string_lossy();
    let temp = temp.trim_end_matches('/');
    if !temp.is_empty() {
        out = replace_tokens(&out, &format!("{temp}/"), |after| {
            let path = after
                .find(|c: char| c.is_whitespace() || "\"'`()<>[]{},;".contains(c))
                .unwrap_or(after.len());
            Some((path, "<temp>"))
        });
    }
    out
}

/// Replaces each `marker` that starts a token (at the start of `text` or after a
/// character that cannot continue a path) and that `rest` accepts: `rest` is given what
/// follows the marker and returns how many bytes of it belong to the match and what the
/// whole match becomes.
fn replace_tokens(
    text: &str,
    marker: &str,
    rest: impl Fn(&str) -> Option<(usize, &'static str)>,
) -> String {
    let mut out = String::with_capacity(text.len());
    let mut from = 0;
    let mut search = 0;
    while let Some(found) = text[search..].find(marker) {
        let at = search + found;
        let starts_token = text[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !is_path_char(c) && c != '/');
        let after = &text[at + marker.len()..];
        match rest(after).filter(|_| starts_token) {
            Some((len, with)) => {
                out.push_str(&text[from..at]);
                out.push_str(with);
                from = at + marker.len() + len;
                search = from;
            }
            None => search = at + marker.len(),
        }
    }
    out.push_str(&text[from..]);
    out
}

/// The view's texts, made [`SiteAddress::relative`], owned so a view can borrow them.
struct Told {
    instruction: Instruction,
    observation: Observation,
    feedback: Option<PolicyFeedback>,
    history: Vec<HistoryEntry>,
}

/// Puts `view` to `agent` with every text in it made [`SiteAddress::relative`] to
/// `site`: the one way the harness asks an agent for a reply.
pub async fn ask(
    agent: &dyn Agent,
    view: AgentView<'_>,
    site: &SiteAddress,
) -> Result<AgentReply, AgentError> {
    // Destructured whole: a field added to the view must be decided on here.
    let AgentView {
        instruction,
        observation,
        feedback,
        history,
        budget_left,
        step,
        image,
        seed,
    } = view;
    let told = Told {
        instruction: Instruction {
            task: instruction.task,
            text: site.relative(&instruction.text),
        },
        observation: Observation {
            png: observation.png.clone(),
            size: observation.size,
            text: site.relative(&observation.text),
        },
        feedback: feedback.map(|f| site.feedback(f)),
        history: history
            .iter()
            .map(|h| HistoryEntry {
                reply: site.relative(&h.reply),
                actions: h.actions.clone(),
                tool_message: site.relative(&h.tool_message),
                feedback: h.feedback.as_ref().map(|f| site.feedback(f)),
            })
            .collect(),
    };
    agent
        .reply(AgentView {
            instruction: &told.instruction,
            observation: &told.observation,
            feedback: told.feedback.as_ref(),
            history: &told.history,
            budget_left,
            step,
            image,
            seed,
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site() -> SiteAddress {
        SiteAddress::new("http://127.0.0.1:40123", "0f3a9c2b7d1e4a55")
    }

    #[test]
    fn the_sessions_urls_become_paths_from_the_tasks_start() {
        let s = site();
        assert_eq!(
            s.relative(
                "The page navigated to http://127.0.0.1:40123/s/0f3a9c2b7d1e4a55/search/results?q=Record-10."
            ),
            "The page navigated to /search/results?q=Record-10."
        );
        assert_eq!(
            s.relative("at http://127.0.0.1:40123/s/0f3a9c2b7d1e4a55?layout=1 and /s/0f3a9c2b7d1e4a55/login"),
            "at /?layout=1 and /login"
        );
        assert_eq!(
            s.relative("the server http://127.0.0.1:40123 and http://127.0.0.1:40123/warm"),
            "the server / and /warm"
        );
        let plain = "Clicked at (10, 20). No change detected on the page.";
        assert_eq!(s.relative(plain), plain);
    }

    #[test]
    fn another_run_tells_the_same() {
        let a = site()
            .relative("navigated to http://127.0.0.1:40123/s/0f3a9c2b7d1e4a55/search/results?q=x");
        let b = SiteAddress::new("http://127.0.0.1:51999/", "77aa00bb11cc22dd")
            .relative("navigated to http://127.0.0.1:51999/s/77aa00bb11cc22dd/search/results?q=x");
        assert_eq!(a, b);
    }

    #[test]
    fn a_longer_scope_or_port_is_not_mistaken_for_this_one() {
        let s = SiteAddress::new("http://example.test:80", "ab");
        assert_eq!(
            s.relative("http://example.test:8080/s/abc/x"),
            "http://example.test:8080/s/abc/x"
        );
    }

    #[test]
    fn leaks_of_any_run_are_scrubbed_by_shape() {
        assert_eq!(
            scrub_run_specifics(
                "went to http://127.0.0.1:5555/s/deadbeef00112233/search/results?q=a, then http://localhost:8/s/x_1/form"
            ),
            "went to /search/results?q=a, then /form"
        );
        let temp = std::env::temp_dir().join(".tmpAbC123/before.png");
        assert_eq!(
            scrub_run_specifics(&format!("see {} (before)", temp.display())),
            "see <temp> (before)"
        );
        // Not a path start, not a port, not a scope: left alone.
        for kept in [
            "docs/s/abc/def",
            "http://127.0.0.1:/x",
            "https://example.com/s/abc/x",
            "a /s/ b",
        ] {
            assert_eq!(scrub_run_specifics(kept), kept);
        }
    }
}
