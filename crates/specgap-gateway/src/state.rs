//! State shared between the gateway's thread and its handle: the abandon signal, the latched
//! fault, the running totals and the journal.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rand::Rng as _;
use rand::SeedableRng as _;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use specgap_protocol::event::Usage;
use tokio::sync::{Notify, watch};

use crate::journal::Journal;
use crate::supervisor::{ExchangeRecord, RequestClass};

/// A fault that stops the gateway forwarding: the engine ends the episode with an
/// infrastructure error (never a task failure).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum GatewayFault {
    /// An upstream failed every try of one request.
    UpstreamDead {
        /// The request (journal seq).
        seq: u64,
        /// Tries made.
        attempts: u32,
        /// The last fault, lowercase.
        fault: String,
    },
    /// The journal file could not be written: exchanges could no longer be recorded.
    Journal {
        /// The error, one line.
        message: String,
    },
}

impl std::fmt::Display for GatewayFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GatewayFault::UpstreamDead { attempts, fault, .. } => {
                write!(f, "the model service failed after {attempts} attempts; last fault: {fault}")
            }
            GatewayFault::Journal { message } => write!(f, "the gateway journal cannot be written: {message}"),
        }
    }
}

/// Running totals of one gateway.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GatewayReport {
    /// Exchanges recorded (every request, refused ones included).
    pub exchanges: u64,
    /// Turns: main-loop requests that were forwarded ([`ExchangeRecord::is_turn`]).
    pub main_requests: u64,
    /// Usage of main-loop requests.
    pub main: Usage,
    /// Usage of side requests.
    pub side: Usage,
    /// Cache-written prompt tokens (Anthropic), part of the input tokens above.
    pub cache_creation_tokens: u64,
    /// Tool calls in main-loop responses.
    pub tool_calls: u64,
    /// Whether the gateway was abandoned (deadline or [`crate::GatewayHandle::abandon`]).
    pub abandoned: bool,
    /// Exchanges the abandonment cut while they were in flight
    /// ([`crate::Outcome::Abandoned`]); requests refused after it are not counted.
    #[serde(default)]
    pub abandoned_exchanges: u64,
    /// The fault that stopped forwarding, if any.
    pub fault: Option<GatewayFault>,
}

impl GatewayReport {
    /// Main and side usage together.
    pub fn total_usage(&self) -> Usage {
        let mut total = self.main.clone();
        total.add(&self.side);
        total
    }

    fn add(&mut self, record: &ExchangeRecord) {
        self.exchanges += 1;
        if record.outcome == crate::Outcome::Abandoned {
            self.abandoned_exchanges += 1;
        }
        self.cache_creation_tokens += record.cache_creation_tokens;
        match record.class {
            RequestClass::Main => {
                if record.is_turn() {
                    self.main_requests += 1;
                }
                self.main.add(&record.usage);
                self.tool_calls += record.response.as_ref().map_or(0, |r| r.tool_calls.len() as u64);
            }
            RequestClass::Side => self.side.add(&record.usage),
        }
    }
}

pub(crate) struct Shared {
    abandon: watch::Sender<bool>,
    fault: Mutex<Option<GatewayFault>>,
    report: Mutex<GatewayReport>,
    pub(crate) journal: Mutex<Journal>,
    inflight: AtomicUsize,
    /// Main-loop responses streaming to the client and not yet recorded.
    main_streams: AtomicUsize,
    idle: Notify,
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    pub(crate) fn new(journal: Journal) -> Self {
        Shared {
            abandon: watch::Sender::new(false),
            fault: Mutex::new(None),
            report: Mutex::new(GatewayReport::default()),
            journal: Mutex::new(journal),
            inflight: AtomicUsize::new(0),
            main_streams: AtomicUsize::new(0),
            idle: Notify::new(),
        }
    }

    pub(crate) fn abandon(&self) {
        self.abandon.send_replace(true);
    }

    pub(crate) fn is_abandoned(&self) -> bool {
        *self.abandon.borrow()
    }

    /// Resolves once the gateway is abandoned.
    pub(crate) fn abandoned(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut receiver = self.abandon.subscribe();
        async move {
            // An error means the sender is gone, i.e. the gateway is going away: abandoned too.
            let _ = receiver.wait_for(|abandoned| *abandoned).await;
        }
    }

    pub(crate) fn fault(&self) -> Option<GatewayFault> {
        lock(&self.fault).clone()
    }

    /// Latches the first fault.
    pub(crate) fn set_fault(&self, fault: GatewayFault) {
        let mut slot = lock(&self.fault);
        if slot.is_none() {
            tracing::error!("gateway: {fault}");
            *slot = Some(fault);
        }
    }

    pub(crate) fn add_record(&self, record: &ExchangeRecord) {
        lock(&self.report).add(record);
    }

    pub(crate) fn report(&self) -> GatewayReport {
        let mut report = lock(&self.report).clone();
        report.abandoned = self.is_abandoned();
        report.fault = self.fault();
        report
    }

    /// Exchanges begun and not yet recorded.
    pub(crate) fn in_flight(&self) -> u64 {
        self.inflight.load(Ordering::SeqCst) as u64
    }

    /// Main-loop responses streaming and not yet recorded: a client may act on a tool call
    /// it has read from one before the gateway records its exchange.
    pub(crate) fn main_streams(&self) -> u64 {
        self.main_streams.load(Ordering::SeqCst) as u64
    }

    pub(crate) fn begin_main_stream(&self) {
        self.main_streams.fetch_add(1, Ordering::SeqCst);
    }

    pub(crate) fn end_main_stream(&self) {
        self.main_streams.fetch_sub(1, Ordering::SeqCst);
    }

    pub(crate) fn begin_exchange(&self) {
        self.inflight.fetch_add(1, Ordering::SeqCst);
    }

    pub(crate) fn end_exchange(&self) {
        if self.inflight.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.idle.notify_waiters();
        }
    }

    /// Waits until no exchange is in flight.
    pub(crate) async fn idle(&self) {
        loop {
            let notified = self.idle.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.inflight.load(Ordering::SeqCst) == 0 {
                return;
            }
            notified.await;
        }
    }
}

/// Longest computed backoff delay (as the chat agent).
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// Longest `Retry-After` honoured (as the chat agent).
pub(crate) const MAX_RETRY_AFTER: Duration = Duration::from_secs(600);

/// The seeded backoff of retries: `base · 2^(attempt−1)`, capped at 60 s, times a ChaCha8
/// jitter in [0.5, 1) (crates/specgap-agents/src/chat/client.rs does the same).
pub(crate) struct Backoff {
    rng: ChaCha8Rng,
    base: Duration,
}

impl Backoff {
    pub(crate) fn new(seed: u64, base: Duration) -> Self {
        Backoff { rng: ChaCha8Rng::seed_from_u64(seed), base }
    }

    /// The delay before retry `attempt` (1-based).
    pub(crate) fn delay(&mut self, attempt: u32) -> Duration {
        let exponential = self.base.saturating_mul(1u32 << attempt.saturating_sub(1).min(16)).min(MAX_BACKOFF);
        exponential.mul_f64(self.rng.random_range(0.5..1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_within_its_jitter_and_repeats_with_the_seed() {
        let mut a = Backoff::new(7, Duration::from_millis(100));
        let delays: Vec<Duration> = (1..=4).map(|n| a.delay(n)).collect();
        for (n, d) in delays.iter().enumerate() {
            let full = Duration::from_millis(100 << n);
            assert!(*d >= full / 2 && *d < full, "{d:?} for retry {}", n + 1);
        }
        let mut b = Backoff::new(7, Duration::from_millis(100));
        assert_eq!((1..=4).map(|n| b.delay(n)).collect::<Vec<_>>(), delays);
        assert!(Backoff::new(1, Duration::from_secs(50)).delay(3) <= MAX_BACKOFF);
    }
}
