//! The gateway's typed errors (what the caller gets; what the agent gets is a protocol-shaped
//! HTTP error, [`crate::shape`]).

use std::path::PathBuf;

/// Why a gateway cannot be started, a journal read, or a namespace listener bound.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// The configuration is inconsistent.
    #[error("gateway configuration: {0}")]
    Config(String),
    /// The operating system's random generator failed.
    #[error("cannot draw a random token: {0}")]
    Random(String),
    /// The listener cannot be used (address, non-blocking mode, registration).
    #[error("cannot serve on the listener")]
    Listener(#[source] std::io::Error),
    /// The gateway's thread or runtime cannot be started.
    #[error("cannot start the gateway's runtime")]
    Runtime(#[source] std::io::Error),
    /// The upstream HTTP client cannot be built.
    #[error("cannot build the upstream http client")]
    Client(#[source] reqwest::Error),
    /// The journal file cannot be opened, written or read.
    #[error("gateway journal {}", path.display())]
    Journal {
        /// The journal file.
        path: PathBuf,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
    /// A journal line is not what the gateway writes.
    #[error("gateway journal {} line {line}: {message}", path.display())]
    JournalFormat {
        /// The journal file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A network namespace cannot be opened or entered, or the listener not bound inside it.
    #[error("cannot bind a loopback listener in network namespace {}", path.display())]
    Namespace {
        /// The namespace file (`/proc/<pid>/ns/net`, a bind-mounted namespace, or `fd:<n>`).
        path: PathBuf,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
    /// The network tripwire cannot be armed in a namespace: the namespace cannot be entered,
    /// or its resolver or a listener not bound there (not root; a port taken).
    #[error("cannot arm the network tripwire in network namespace {}", path.display())]
    Tripwire {
        /// The namespace file (`/proc/<pid>/ns/net`, a bind-mounted namespace, or `fd:<n>`).
        path: PathBuf,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
    /// The gateway's thread panicked.
    #[error("the gateway thread panicked")]
    Panicked,
}
