//! Forwarding to the upstream, with retries (docs/decisions.md "Gateway: retries and cut
//! streams").
//!
//! * Retried, as the chat agent retries: connection errors, no response head within the
//!   request timeout, HTTP 408 / 425 / 429 / 5xx, a non-streamed 2xx body that cannot be read
//!   or (when it says it is JSON) does not parse, and a streamed 2xx answer that breaks or
//!   ends before its first byte. Backoff `retry_base · 2^(n−1)` (≤ 60 s) times a seeded jitter
//!   in [0.5, 1); a `Retry-After: <seconds>` header (≤ 600 s) replaces it. After
//!   `max_retries` retries the upstream is dead ([`Forwarded::Dead`]).
//! * Not retried: any other status; the (redacted) answer is forwarded as it came.
//! * A stream is forwarded chunk by chunk as it arrives (the client's response head is sent
//!   with the first body chunk, so everything before it can still be retried). Once a byte has
//!   reached the client a break cannot be retried without the client seeing part of an answer
//!   twice: the client's stream is ended with the protocol's error event and the exchange
//!   recorded as [`crate::Outcome::StreamCut`]; the CLI's own retry makes a new request.
//! * Abandonment (deadline, [`crate::GatewayHandle::abandon`]) wins every race: waits and
//!   reads are given up at once and nothing more of the upstream's answer is forwarded.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::Method;
use http::header::{self, HeaderMap};
use specgap_protocol::event::Usage;
use tokio::sync::mpsc;

use crate::config::Protocol;
use crate::redact::StreamRedactor;
use crate::response::ResponseParser;
use crate::server::{Ctx, Exchange};
use crate::state::{MAX_RETRY_AFTER, lock};
use crate::supervisor::Outcome;

/// A request ready to send upstream.
pub(crate) struct Prepared {
    pub(crate) method: Method,
    pub(crate) url: String,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
    pub(crate) protocol: Protocol,
    /// The client asked for a stream.
    pub(crate) stream: bool,
}

/// What forwarding came to.
pub(crate) enum Forwarded {
    /// A whole answer (2xx, or an error status that is not retried).
    Full { status: u16, headers: HeaderMap, body: Bytes, event_stream: bool },
    /// A 2xx stream whose first chunk has arrived; the rest is read by [`pump`].
    Stream { status: u16, headers: HeaderMap, first: Bytes, response: reqwest::Response, attempt_started: Instant },
    /// Abandoned while waiting.
    Abandoned,
    /// Every try failed.
    Dead { attempts: u32, fault: String },
}

enum Answer {
    Full { status: u16, headers: HeaderMap, body: Bytes, event_stream: bool },
    Stream { status: u16, headers: HeaderMap, first: Bytes, response: reqwest::Response },
}

struct Fault {
    message: String,
    retry_after: Option<Duration>,
}

fn fault(message: String) -> Fault {
    Fault { message, retry_after: None }
}

/// Sends `request` with retries; `usage` gets `requests` (answers received), `retries` and
/// `latency_ms` (not the latency of a stream's remainder, which [`pump`] adds).
pub(crate) async fn forward(ctx: &Ctx, request: &Prepared, usage: &mut Usage) -> Forwarded {
    let mut attempt = 0u32;
    loop {
        let started = Instant::now();
        let result = tokio::select! {
            biased;
            () = ctx.shared.abandoned() => None,
            result = try_once(ctx, request, usage) => Some(result),
        };
        let Some(result) = result else {
            usage.latency_ms += elapsed_ms(started);
            return Forwarded::Abandoned;
        };
        let failure = match result {
            Ok(Answer::Stream { status, headers, first, response }) => {
                return Forwarded::Stream { status, headers, first, response, attempt_started: started };
            }
            Ok(Answer::Full { status, headers, body, event_stream }) => {
                usage.latency_ms += elapsed_ms(started);
                return Forwarded::Full { status, headers, body, event_stream };
            }
            Err(failure) => failure,
        };
        usage.latency_ms += elapsed_ms(started);
        let message = ctx.redactor.redact(failure.message.as_bytes()).into_owned();
        let message = String::from_utf8_lossy(&message).into_owned();
        if attempt >= ctx.config.retry.max_retries {
            return Forwarded::Dead { attempts: attempt + 1, fault: message };
        }
        attempt += 1;
        usage.retries += 1;
        let delay = failure.retry_after.map_or_else(|| lock(&ctx.backoff).delay(attempt), |d| d.min(MAX_RETRY_AFTER));
        tracing::warn!(
            "gateway: {} request failed ({message}); retry {attempt} of {} in {delay:?}",
            request.protocol,
            ctx.config.retry.max_retries
        );
        tokio::select! {
            biased;
            () = ctx.shared.abandoned() => return Forwarded::Abandoned,
            () = tokio::time::sleep(delay) => {}
        }
    }
}

async fn try_once(ctx: &Ctx, request: &Prepared, usage: &mut Usage) -> Result<Answer, Fault> {
    let timeout = ctx.config.retry.request_timeout;
    let sent = ctx.client.request(request.method.clone(), &request.url).headers(request.headers.clone()).body(request.body.clone()).send();
    let mut response = match tokio::time::timeout(timeout, sent).await {
        Err(_) => return Err(fault(format!("the model service did not answer within {} s", timeout.as_secs_f64()))),
        Ok(Err(e)) => return Err(fault(transport_message(e))),
        Ok(Ok(response)) => response,
    };
    usage.requests += 1;
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let event_stream = is_event_stream(&headers);
    if !(200..300).contains(&status) {
        let body = tokio::time::timeout(timeout, response.bytes()).await.ok().and_then(Result::ok).unwrap_or_default();
        if matches!(status, 408 | 425 | 429 | 500..=599) {
            let short: String = String::from_utf8_lossy(&body).chars().take(300).collect();
            return Err(Fault { message: format!("http {status}: {short}"), retry_after: retry_after(&headers) });
        }
        return Ok(Answer::Full { status, headers, body, event_stream });
    }
    if request.stream || event_stream {
        loop {
            match tokio::time::timeout(timeout, response.chunk()).await {
                Err(_) => return Err(fault(format!("the model service sent nothing for {} s", timeout.as_secs_f64()))),
                Ok(Err(e)) => return Err(fault(format!("the stream broke before its first byte: {}", transport_message(e)))),
                Ok(Ok(None)) => return Err(fault("the stream ended before its first byte".into())),
                Ok(Ok(Some(chunk))) if chunk.is_empty() => continue,
                Ok(Ok(Some(first))) => return Ok(Answer::Stream { status, headers, first, response }),
            }
        }
    }
    let body = match tokio::time::timeout(timeout, response.bytes()).await {
        Err(_) => return Err(fault(format!("the model service's answer did not arrive within {} s", timeout.as_secs_f64()))),
        Ok(Err(e)) => return Err(fault(format!("the answer broke off: {}", transport_message(e)))),
        Ok(Ok(body)) => body,
    };
    if says_json(&headers) && serde_json::from_slice::<serde::de::IgnoredAny>(&body).is_err() {
        return Err(fault("the answer is not the json it says it is".into()));
    }
    Ok(Answer::Full { status, headers, body, event_stream })
}

/// Forwards the rest of a stream to the client (module guide) and records the exchange.
pub(crate) async fn pump(
    ctx: Arc<Ctx>,
    mut ex: Exchange,
    mut response: reqwest::Response,
    first: Bytes,
    sender: mpsc::Sender<Bytes>,
    attempt_started: Instant,
) {
    let Some((protocol, endpoint)) = ex.info.as_ref().map(|i| (i.protocol, i.endpoint)) else {
        ex.finish(Outcome::ClientGone);
        return;
    };
    ex.begin_main_stream();
    let event_stream = is_event_stream(response.headers());
    let mut parser = ResponseParser::new(protocol, endpoint, event_stream);
    let mut redactor = StreamRedactor::default();
    let timeout = ctx.config.retry.request_timeout;
    let mut next = Some(first);
    let outcome = loop {
        if let Some(chunk) = next.take() {
            // The parser reads what the client gets: nothing derived from the answer may hold
            // a secret the client could not see.
            let out = redactor.push(&ctx.redactor, &chunk);
            parser.feed(&out);
            if !out.is_empty() {
                ex.sent.extend_from_slice(&out);
                let delivered = tokio::select! {
                    biased;
                    () = ctx.shared.abandoned() => None,
                    sent = sender.send(Bytes::from(out)) => Some(sent.is_ok()),
                };
                match delivered {
                    None => break Outcome::Abandoned,
                    Some(false) => break Outcome::ClientGone,
                    Some(true) => {}
                }
            }
        }
        let read = tokio::select! {
            biased;
            () = ctx.shared.abandoned() => None,
            read = tokio::time::timeout(timeout, response.chunk()) => Some(read),
        };
        match read {
            None => break Outcome::Abandoned,
            Some(Ok(Ok(Some(chunk)))) => next = Some(chunk),
            Some(Ok(Ok(None))) if parser.complete() => break Outcome::Completed,
            Some(Ok(Ok(None))) => {
                break Outcome::StreamCut { fault: "the model service ended the stream before the response was complete".into() };
            }
            Some(Ok(Err(e))) => break Outcome::StreamCut { fault: format!("the stream broke: {}", transport_message(e)) },
            Some(Err(_)) => break Outcome::StreamCut { fault: format!("the model service sent nothing for {} s", timeout.as_secs_f64()) },
        }
    };
    // Dropping the response closes its connection: the upstream's work is abandoned.
    drop(response);
    ex.usage.latency_ms += elapsed_ms(attempt_started);
    let mut closing = redactor.finish();
    parser.feed(&closing);
    if event_stream {
        match &outcome {
            Outcome::StreamCut { .. } => {
                closing
                    .extend(crate::shape::stream_error_event(protocol, "the model service's stream broke off; the response is incomplete"));
            }
            Outcome::Abandoned => {
                closing.extend(crate::shape::stream_error_event(protocol, "the episode has ended; the model request was abandoned"));
            }
            _ => {}
        }
    }
    if !closing.is_empty() && outcome != Outcome::ClientGone {
        ex.sent.extend_from_slice(&closing);
        if outcome == Outcome::Abandoned {
            // The client may not be reading; never wait for it.
            let _ = sender.try_send(Bytes::from(closing));
        } else {
            tokio::select! {
                biased;
                () = ctx.shared.abandoned() => {}
                _ = sender.send(Bytes::from(closing)) => {}
            }
        }
    }
    let (model_response, tokens) = parser.finish();
    ex.usage.add(&tokens.usage());
    ex.cache_creation_tokens = tokens.cache_creation;
    ex.response = Some(model_response);
    ex.finish(outcome);
    // The client's stream ends only now, so whoever sees its end finds the exchange recorded.
    drop(sender);
}

fn elapsed_ms(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX)
}

fn is_event_stream(headers: &HeaderMap) -> bool {
    content_type(headers).starts_with("text/event-stream")
}

fn says_json(headers: &HeaderMap) -> bool {
    let kind = content_type(headers);
    kind.starts_with("application/json") || kind.contains("+json")
}

fn content_type(headers: &HeaderMap) -> String {
    headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").trim().to_ascii_lowercase()
}

/// `Retry-After` in seconds (as the chat agent reads it).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    headers
        .get(header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(Duration::from_secs_f64)
}

/// A transport error in one lowercase line, without the URL (which may carry a
/// query-placed key).
fn transport_message(error: reqwest::Error) -> String {
    if error.is_timeout() {
        "the request timed out".into()
    } else if error.is_connect() {
        "cannot connect to the model service".into()
    } else {
        format!("transport error: {}", specgap_protocol::text::error_chain(&error.without_url()))
    }
}
