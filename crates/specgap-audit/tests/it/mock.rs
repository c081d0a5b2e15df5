//! The scripted model server of these tests: `specgap_gateway::mock::MockUpstream` (which
//! captures every request with its exact body bytes), answered by a handler that sees each
//! request and its 0-based arrival number.

use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use specgap_gateway::mock::{MockReply, MockUpstream, ReceivedRequest};

/// A captured request (path, lowercase headers, exact body bytes).
pub type Captured = ReceivedRequest;

/// A running mock; `url` is its OpenAI-compatible base (`http://127.0.0.1:<port>/v1`).
pub struct MockServer {
    pub url: String,
    upstream: MockUpstream,
}

impl MockServer {
    /// `handler(request, n)` gives the status and JSON body of the n-th (0-based) request.
    pub fn start(handler: impl Fn(&Captured, usize) -> (u16, String) + Send + Sync + 'static) -> Self {
        let upstream = MockUpstream::start([]).unwrap();
        let arrivals = AtomicUsize::new(0);
        upstream.set_responder(move |request| {
            let (status, body) = handler(request, arrivals.fetch_add(1, Ordering::SeqCst));
            MockReply::json(status, body)
        });
        MockServer { url: format!("{}/v1", upstream.url()), upstream }
    }

    pub fn requests(&self) -> Vec<Captured> {
        self.upstream.requests()
    }
}

/// A completion of `text` with 100 prompt and 20 completion tokens.
pub fn completion(text: &str) -> String {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "owner-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
    })
    .to_string()
}
