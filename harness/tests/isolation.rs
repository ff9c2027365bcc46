//! A reused page keeps nothing of the trial before it.
//!
//! `Isolation::ReusedContext` hands one page (and its browser context) to trial after
//! trial, reset in between. These tests plant every kind of state a page can leave on
//! a real Chromium — cookies (a script's and an HttpOnly one), local and session
//! storage, IndexedDB, Cache Storage, a service worker, history entries, the window
//! name, the pointer position and a viewport override — then:
//!
//! - navigate the *same* page on without the reset, and find every kind still there
//!   (so each probe can see what it looks for), but nothing in the HTTP cache: the page
//!   asks for a response to be cached and the fixture server forbids it (the reset
//!   relies on that and does not clear the cache), and
//! - close it into the pool (its scripts still writing), take the *same* page back (same
//!   target: it was reused, not replaced) and find none of them, with the history of a
//!   page from a new context. Twice: a reused page's items alternate between the fixture
//!   server's two origins, so the third item loads from the origin the first one
//!   planted everything in.

use chromiumoxide::cdp::browser_protocol::network::CookieParam;
use faultline::engine::browser::{
    find_chromium, BrowserHandle, Isolation, PagePool, PoolSize, SiteOrigins, TrialPage,
};
use faultline_sites::FixtureServer;
use faultline_tasks::{Point, Size};
use serde_json::Value;
use std::collections::BTreeSet;

const VIEWPORT: Size = Size {
    width: 900,
    height: 600,
};

/// Leaves one of every kind of state a page can leave behind (the pointer and the
/// viewport are left by the caller).
const PLANT: &str = r#"(async () => {
  document.cookie = 'leak=script; path=/';
  localStorage.setItem('leak', '1');
  sessionStorage.setItem('leak', '1');
  window.name = 'leak';
  await new Promise((done, fail) => {
    const open = indexedDB.open('leak', 1);
    open.onupgradeneeded = () => open.result.createObjectStore('s');
    open.onerror = () => fail(open.error);
    open.onsuccess = () => {
      const tx = open.result.transaction('s', 'readwrite');
      tx.objectStore('s').put(1, 'k');
      tx.oncomplete = () => { open.result.close(); done(); };
    };
  });
  const cache = await caches.open('leak');
  await cache.put('/warm?leak', new Response('leak'));
  await fetch('/static/ledger.js', { cache: 'force-cache' });
  // A registration is kept from the moment it is made; its worker need not start.
  navigator.serviceWorker.register('/miniwob/common/ui_utils.js', { scope: '/miniwob/common/' });
  for (let i = 0; i < 100 && (await navigator.serviceWorker.getRegistrations()).length === 0; i++) {
    await new Promise((r) => setTimeout(r, 20));
  }
  history.pushState({}, '', '#one');
  history.pushState({}, '', '#two');
  return true;
})()"#;

/// Scripts that write again after the trial has ended, while the page is being reset: a
/// timer, and the page's way out.
const LATE_WRITER: &str = r#"(() => {
  const again = () => {
    localStorage.setItem('leak', '1');
    sessionStorage.setItem('leak', '1');
    window.name = 'leak';
    document.cookie = 'leak=script; path=/';
  };
  setInterval(again, 1);
  addEventListener('pagehide', again);
  return true;
})()"#;

/// What is left on the page now: the kinds found, the history length, the viewport
/// width and how many elements are hovered (after two frames, so a pointer left over
/// the page has been hit-tested again).
const PROBE: &str = r#"(async () => {
  await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  const found = [];
  if (document.cookie.includes('leak=script')) found.push('script cookie');
  if (localStorage.getItem('leak') !== null) found.push('localStorage');
  if (sessionStorage.getItem('leak') !== null) found.push('sessionStorage');
  if (window.name === 'leak') found.push('window.name');
  if ((await indexedDB.databases()).some((d) => d.name === 'leak')) found.push('IndexedDB');
  if ((await caches.keys()).includes('leak')) found.push('Cache Storage');
  try {
    await fetch('/static/ledger.js', { cache: 'only-if-cached', mode: 'same-origin' });
    found.push('HTTP cache');
  } catch (e) {}
  if ((await navigator.serviceWorker.getRegistrations()).length > 0) found.push('service worker');
  if (document.querySelectorAll(':hover').length > 0) found.push('pointer');
  return { found, history: history.length, width: innerWidth };
})()"#;

struct Left {
    found: BTreeSet<String>,
    history: u64,
}

/// Everything `page` still holds, as the page sees it plus its HttpOnly cookie (which
/// only the browser sees) and its viewport.
async fn probe(page: &TrialPage) -> Left {
    let v: Value = page.eval(PROBE).await.unwrap();
    let mut found: BTreeSet<String> = v["found"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_string())
        .collect();
    let cookies = page.cdp_page().get_cookies().await.unwrap();
    if cookies.iter().any(|c| c.name == "http_only_leak") {
        found.insert("HttpOnly cookie".into());
    }
    if v["width"].as_u64() != Some(u64::from(VIEWPORT.width)) {
        found.insert("viewport override".into());
    }
    Left {
        found,
        history: v["history"].as_u64().unwrap(),
    }
}

async fn plant(page: &TrialPage, base: &str) {
    assert_eq!(page.eval(PLANT).await.unwrap(), Value::Bool(true));
    let cookie = CookieParam::builder()
        .name("http_only_leak")
        .value("1")
        .url(base.to_string())
        // Cookies are bound to their port (as a server's `Set-Cookie` is); one set over
        // CDP is bound to the port it is given, else to none.
        .source_port(base.rsplit(':').next().unwrap().parse::<i64>().unwrap())
        .http_only(true)
        .build()
        .unwrap();
    page.cdp_page().set_cookie(cookie).await.unwrap();
    page.hover(Point::new(200.0, 200.0)).await.unwrap();
    page.emulate_viewport(Size::new(700, 500)).await.unwrap();
}

/// Takes pages from `pool` until the one with target `id` comes back (the others are
/// kept open meanwhile and returned). A pool of 1 ready page holds 3 pages at most.
async fn take_back(pool: &PagePool, id: &str) -> (TrialPage, Vec<TrialPage>) {
    let mut others = Vec::new();
    for _ in 0..3 {
        let page = pool.take().await.unwrap();
        if page.cdp_page().target_id().as_ref() == id {
            return (page, others);
        }
        others.push(page);
    }
    panic!("the closed page never came back to the pool: it was not reused");
}

const ALL: &[&str] = &[
    "script cookie",
    "HttpOnly cookie",
    "localStorage",
    "sessionStorage",
    "window.name",
    "IndexedDB",
    "Cache Storage",
    "service worker",
    "pointer",
    "viewport override",
];

/// The fixture server on loopback and a Chromium of its own.
async fn server_and_browser() -> (FixtureServer, BrowserHandle) {
    let (server, _key) = FixtureServer::start_loopback().await.unwrap();
    let browser = BrowserHandle::launch(&find_chromium(None).unwrap())
        .await
        .unwrap();
    (server, browser)
}

/// The URL of a trial on `page`'s origin (a reused page's items alternate between the
/// server's two origins).
fn trial_url(page: &TrialPage) -> String {
    format!("{}/warm?trial", page.origin())
}

/// Plants every kind on `page` (at its trial URL), checks the probe sees them all after
/// a navigation without the reset, then starts scripts that keep writing and closes the
/// page into its pool.
async fn plant_and_close(page: TrialPage, clean: &Left) {
    page.goto(&trial_url(&page)).await.unwrap();
    plant(&page, page.origin()).await;
    // The same page, navigated on without the reset: every kind is still there.
    page.goto(&format!("{}&again", trial_url(&page)))
        .await
        .unwrap();
    let kept = probe(&page).await;
    let expected: BTreeSet<String> = ALL.iter().map(|s| s.to_string()).collect();
    assert_eq!(
        kept.found, expected,
        "the probes must see what was planted, and no HTTP cache entry"
    );
    assert!(kept.history > clean.history, "{} entries", kept.history);
    // Closed into the pool with scripts still writing (a timer, and `pagehide` when the
    // next item's page loads).
    assert_eq!(page.eval(LATE_WRITER).await.unwrap(), Value::Bool(true));
    page.close().await;
}

/// Loads a trial on `page` and asserts nothing of an earlier one is there.
async fn assert_clean(page: &TrialPage, clean: &Left, which: &str) {
    page.goto(&trial_url(page)).await.unwrap();
    let left = probe(page).await;
    assert!(
        left.found.is_empty(),
        "state crossed the reset into the {which} item: {:?}",
        left.found
    );
    assert_eq!(
        left.history, clean.history,
        "history entries crossed the reset into the {which} item"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reused_page_keeps_no_state_of_the_trial_before() {
    let (server, browser) = server_and_browser().await;
    let origins = SiteOrigins::of(&server);
    let fresh_pool = browser.page_pool(
        VIEWPORT,
        PoolSize::fixed(1),
        origins.clone(),
        Isolation::FreshContext,
    );
    let reused_pool = browser.page_pool(
        VIEWPORT,
        PoolSize::fixed(1),
        origins.clone(),
        Isolation::ReusedContext,
    );

    // What a page from a new context holds once a trial has loaded its page.
    let fresh = fresh_pool.take().await.unwrap();
    fresh.goto(&trial_url(&fresh)).await.unwrap();
    let clean = probe(&fresh).await;
    assert!(clean.found.is_empty(), "a new context: {:?}", clean.found);
    fresh.close().await;

    // Three items on one page. The second loads from the other origin; the third from
    // the first origin again, where the first item planted everything and wrote again
    // on its way out: each finds nothing.
    let first = reused_pool.take().await.unwrap();
    let id = first.cdp_page().target_id().as_ref().to_string();
    let first_origin = first.origin().to_string();
    assert_eq!(first_origin, origins.first());
    plant_and_close(first, &clean).await;

    let (second, others) = take_back(&reused_pool, &id).await;
    assert_ne!(second.origin(), first_origin, "the items alternate origins");
    assert_clean(&second, &clean, "second").await;
    for p in others {
        p.close().await;
    }
    plant_and_close(second, &clean).await;

    let (third, others) = take_back(&reused_pool, &id).await;
    assert_eq!(third.origin(), first_origin, "the items alternate origins");
    assert_clean(&third, &clean, "third").await;

    for p in others {
        p.close().await;
    }
    third.close().await;
    drop((fresh_pool, reused_pool));
    browser.close().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_whose_renderer_crashed_is_replaced_not_reused() {
    let (server, browser) = server_and_browser().await;
    let pool = browser.page_pool(
        VIEWPORT,
        PoolSize::fixed(1),
        SiteOrigins::of(&server),
        Isolation::ReusedContext,
    );
    let page = pool.take().await.unwrap();
    let id = page.cdp_page().target_id().as_ref().to_string();
    page.crash_renderer().await.unwrap();
    page.close().await;
    // The pool holds at most 3 pages; none of the next 4 may be the crashed one, and
    // each must work.
    for _ in 0..4 {
        let p = pool.take().await.unwrap();
        assert_ne!(p.cdp_page().target_id().as_ref(), id.as_str());
        assert_eq!(p.eval("1 + 1").await.unwrap(), serde_json::json!(2));
        p.close().await;
    }
    drop(pool);
    browser.close().await;
    server.shutdown().await;
}

/// A reusing pool serving items that take and give back pages as fast as they can (the
/// resets overlapping the takes, as on a loaded machine) keeps no more pages open than
/// its working items and the spares. A first version of parking let such a pool grow to
/// its in-flight bound: 40 renderers for 20 working items, 12% more CPU per item.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_a_reusing_pool_keeps_only_its_working_pages_and_spares_open() {
    let (server, browser) = server_and_browser().await;
    let base = server.base_url();
    let pool = std::sync::Arc::new(browser.page_pool(
        VIEWPORT,
        PoolSize {
            ahead: 2,
            working: 2,
            most: 8,
        },
        SiteOrigins::of(&server),
        Isolation::ReusedContext,
    ));
    let most_open = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let workers: Vec<_> = (0..2)
        .map(|w| {
            let (pool, most_open, url) =
                (pool.clone(), most_open.clone(), format!("{base}/warm?w{w}"));
            tokio::spawn(async move {
                // As a phase does: the next item takes a page while the last one's page
                // is still being reset.
                let mut resets = Vec::new();
                for _ in 0..15 {
                    let page = pool.take().await.unwrap();
                    let open = pool.pages_open().unwrap();
                    most_open.fetch_max(open, std::sync::atomic::Ordering::SeqCst);
                    page.goto(&url).await.unwrap();
                    resets.push(tokio::spawn(page.close()));
                }
                for r in resets {
                    r.await.unwrap();
                }
            })
        })
        .collect();
    for w in workers {
        w.await.unwrap();
    }
    let most_open = most_open.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        (2..=4).contains(&most_open),
        "{most_open} pages open for 2 working items and 2 spares"
    );
    drop(pool);
    browser.close().await;
    server.shutdown().await;
}
