//! The page and its files, embedded in the binary (no build step, no filesystem access when
//! serving): plain JavaScript modules and one stylesheet under `assets/`.

/// The page. Its `specgap-source` meta tells the scripts where data comes from.
const INDEX: &str = include_str!("../assets/index.html");

/// `(name, content type, text)` of every file under `/assets/`.
pub(crate) const FILES: &[(&str, &str, &str)] = &[
    ("app.js", JS, include_str!("../assets/app.js")),
    ("api.js", JS, include_str!("../assets/api.js")),
    ("dom.js", JS, include_str!("../assets/dom.js")),
    ("run.js", JS, include_str!("../assets/run.js")),
    ("episode.js", JS, include_str!("../assets/episode.js")),
    ("transcript.js", JS, include_str!("../assets/transcript.js")),
    ("compare.js", JS, include_str!("../assets/compare.js")),
    ("highlight.js", JS, include_str!("../assets/highlight.js")),
    ("synthesis.js", JS, include_str!("../assets/synthesis.js")),
    ("style.css", "text/css; charset=utf-8", include_str!("../assets/style.css")),
];

const JS: &str = "text/javascript; charset=utf-8";

/// The marker a static site's `index.html` carries, so a later `--static` into the same
/// directory knows it may replace it.
pub(crate) const GENERATOR: &str = "<meta name=\"generator\" content=\"specgap-view\">";

/// The file `name` under `/assets/`.
pub(crate) fn asset(name: &str) -> Option<(&'static str, &'static str)> {
    FILES.iter().find(|(n, _, _)| *n == name).map(|(_, t, body)| (*t, *body))
}

/// The page: live (data from `/api/`), or static (data from `data/` beside it, the policy
/// repeated in a meta tag since a static host may send no headers).
pub(crate) fn index_html(static_site: bool) -> String {
    if !static_site {
        return INDEX.to_string();
    }
    let csp = format!(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">",
        crate::server::CSP.replace(" frame-ancestors 'none'", "").trim_end_matches(';')
    );
    INDEX.replace("<meta name=\"specgap-source\" content=\"live\">", &format!("<meta name=\"specgap-source\" content=\"static\">\n{csp}"))
}
