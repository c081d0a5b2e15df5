//! # specgap-view
//!
//! `specgap view RUN...`: a read-only viewer of run stores (and of syntheses: their journals,
//! with their calibration rollouts' run stores) in the browser, live while a run is
//! in progress, and usable on runs of 100,000 episodes and episodes of 10,000 events; and
//! `--static DIR`, the same pages as files to publish.
//!
//! ## Where things are
//!
//! | module | what |
//! | --- | --- |
//! | [`server`] | the HTTP server (hyper): loopback by default, Host check, token, CSP, routing |
//! | [`api`] | one function per JSON endpoint, shared by the server and the static writer |
//! | [`access`] | what is private (fenced in the live viewer, withheld from a public site) |
//! | [`events`] | folding long strings in event pages, the text search looks in, the timeline |
//! | `compare_runs` | one run against another, as `specgap compare` (`specgap_report::compare`) |
//! | `csv` | a filtered episode list as CSV |
//! | [`progress`] | planned / finished / running / failed episodes and the time left |
//! | `runs` | the runs served, each opened read-only, with trajectory indexes, the report and package text cached |
//! | `assets` | the page, its JavaScript modules and stylesheet, embedded (`assets/`) |
//! | [`static_site`] | `--static`: one file per API answer under `data/` |
//! | [`synthesis`] | a synthesis's output directory (`journal.json`): its journal page, its rollouts as runs |
//!
//! ## How it stays fast
//!
//! Nothing is loaded whole: episode lists are SQL pages ([`specgap_store::Store::episode_page`]),
//! an episode's events are decoded page by page through a frame index
//! ([`specgap_store::TrajectoryIndex`]) with long strings folded (the whole event is fetched
//! when expanded), the run's report (`specgap_report::build_report`, about 2 s at 100,000
//! episodes) is computed in the background once per change of the store while the page shows
//! everything else, and the text search scans transcripts in parts of at most 300 ms,
//! returning a cursor to continue from.
//!
//! ## How it stays safe
//!
//! Everything the agent or a model wrote is data: the scripts build the page with
//! `textContent` and never parse text as HTML, links are made only to the viewer's own routes,
//! and the Content-Security-Policy ([`server::CSP`]) allows scripts only from the viewer's own
//! files — an injected `<script>` or `javascript:` URL would not run even if it reached the
//! page. The server listens on 127.0.0.1 unless told otherwise, refuses requests without the
//! random token of the printed URL or with a `Host` header naming another site, serves
//! embedded assets only, and reaches files only through a run index and a validated episode
//! id, checking that every path stays inside its run directory. Stores are opened read-only
//! ([`specgap_store::Store::open_read_only`]): the viewer never writes, not even the offline
//! judge's verdicts the report computes.
//!
//! Event kinds this build does not know (written by a newer specgap) are shown raw in the live
//! viewer and withheld from a public site; they never break a page.
#![deny(missing_docs)]

pub mod access;
pub mod api;
mod assets;
mod compare_runs;
mod csv;
mod error;
pub mod events;
pub mod progress;
mod runs;
pub mod server;
pub mod static_site;
pub mod synthesis;

pub use access::Access;
pub use error::ViewError;
pub use runs::RunSet;
pub use server::{ViewerConfig, ViewerHandle, random_token, serve};
pub use static_site::{StaticOptions, StaticSummary, write_static};
