//! Usage read from each protocol's own wire text, streamed and not, with exact values. The
//! answers here are written out by hand in the shapes the providers document (not built by
//! the mock's helpers), each count distinct so a field read from the wrong place shows.

use specgap_gateway::mock::{MockBody, MockReply};
use specgap_gateway::{Outcome, Protocol};

use crate::support::*;

struct Case {
    protocol: Protocol,
    stream: bool,
    reply: MockReply,
    /// (input, output, cached, reasoning, cache_creation)
    expected: (u64, u64, u64, u64, u64),
}

fn sse(events: &[&str]) -> MockReply {
    MockReply::sse(events.iter().map(|e| format!("{e}\n\n").into_bytes()).collect())
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            protocol: Protocol::OpenaiChat,
            stream: false,
            reply: MockReply::json(
                200,
                r#"{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],
                   "usage":{"prompt_tokens":1200,"completion_tokens":340,"total_tokens":1540,
                            "prompt_tokens_details":{"cached_tokens":1024,"audio_tokens":0},
                            "completion_tokens_details":{"reasoning_tokens":256,"audio_tokens":0}}}"#,
            ),
            expected: (1200, 340, 1024, 256, 0),
        },
        Case {
            protocol: Protocol::OpenaiChat,
            stream: true,
            reply: sse(&[
                r#"data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"h"},"finish_reason":null}],"usage":null}"#,
                r#"data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"i"},"finish_reason":"stop"}],"usage":null}"#,
                r#"data: {"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":901,"completion_tokens":77,"total_tokens":978,"prompt_tokens_details":{"cached_tokens":512},"completion_tokens_details":{"reasoning_tokens":13}}}"#,
                "data: [DONE]",
            ]),
            expected: (901, 77, 512, 13, 0),
        },
        Case {
            protocol: Protocol::OpenaiResponses,
            stream: false,
            reply: MockReply::json(
                200,
                r#"{"id":"resp_1","object":"response","status":"completed","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"hi","annotations":[]}]}],
                   "usage":{"input_tokens":2222,"input_tokens_details":{"cached_tokens":2048},"output_tokens":111,"output_tokens_details":{"reasoning_tokens":64},"total_tokens":2333}}"#,
            ),
            expected: (2222, 111, 2048, 64, 0),
        },
        Case {
            protocol: Protocol::OpenaiResponses,
            stream: true,
            reply: sse(&[
                "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\",\"output\":[],\"usage\":null}}",
                "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"delta\":\"hi\"}",
                "event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":2,\"response\":{\"id\":\"resp_1\",\"status\":\"completed\",\"output\":[{\"type\":\"message\",\"content\":[{\"type\":\"output_text\",\"text\":\"hi\"}]}],\"usage\":{\"input_tokens\":3030,\"input_tokens_details\":{\"cached_tokens\":3000},\"output_tokens\":44,\"output_tokens_details\":{\"reasoning_tokens\":21},\"total_tokens\":3074}}}",
            ]),
            expected: (3030, 44, 3000, 21, 0),
        },
        Case {
            protocol: Protocol::AnthropicMessages,
            stream: false,
            reply: MockReply::json(
                200,
                r#"{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn",
                   "usage":{"input_tokens":15,"cache_creation_input_tokens":2100,"cache_read_input_tokens":18000,"output_tokens":503}}"#,
            ),
            // input = 15 uncached + 2100 written + 18000 read.
            expected: (20115, 503, 18000, 0, 2100),
        },
        Case {
            protocol: Protocol::AnthropicMessages,
            stream: true,
            reply: sse(&[
                "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":7,\"cache_creation_input_tokens\":640,\"cache_read_input_tokens\":9000,\"output_tokens\":1}}}",
                "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}",
                "event: ping\ndata: {\"type\":\"ping\"}",
                "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}",
                "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}",
                "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":289}}",
                "event: message_stop\ndata: {\"type\":\"message_stop\"}",
            ]),
            expected: (9647, 289, 9000, 0, 640),
        },
        Case {
            protocol: Protocol::Gemini,
            stream: false,
            reply: MockReply::json(
                200,
                r#"{"candidates":[{"content":{"role":"model","parts":[{"text":"hi"}]},"finishReason":"STOP"}],
                   "usageMetadata":{"promptTokenCount":4096,"cachedContentTokenCount":2048,"candidatesTokenCount":120,"thoughtsTokenCount":880,"totalTokenCount":5096}}"#,
            ),
            // output = 120 candidates + 880 thoughts.
            expected: (4096, 1000, 2048, 880, 0),
        },
        Case {
            protocol: Protocol::Gemini,
            stream: true,
            reply: sse(&[
                r#"data: {"candidates":[{"content":{"role":"model","parts":[{"text":"h"}]}}],"usageMetadata":{"promptTokenCount":333,"totalTokenCount":333}}"#,
                r#"data: {"candidates":[{"content":{"role":"model","parts":[{"text":"i"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":333,"cachedContentTokenCount":100,"candidatesTokenCount":22,"thoughtsTokenCount":8,"toolUsePromptTokenCount":5,"totalTokenCount":368}}"#,
            ]),
            // input = 333 prompt + 5 tool-use prompt; output = 22 + 8 thoughts.
            expected: (338, 30, 100, 8, 0),
        },
    ]
}

#[test]
fn usage_is_read_with_exact_values_from_each_protocol_streamed_and_not() {
    for case in cases() {
        let name = format!("{} stream={}", case.protocol, case.stream);
        let setup = Setup::new(case.protocol, vec![case.reply]);
        let got = setup.send(case.stream);
        assert_eq!(got.status, 200, "{name}");
        let record = &setup.recorder.wait(1)[0];
        assert_eq!(record.outcome, Outcome::Completed, "{name}");
        let u = &record.usage;
        assert_eq!(
            (u.input_tokens, u.output_tokens, u.cached_tokens, u.reasoning_tokens, record.cache_creation_tokens),
            case.expected,
            "{name}"
        );
        assert_eq!((u.requests, u.retries), (1, 0), "{name}");
        assert_eq!(record.response.as_ref().unwrap().text, "hi", "{name}");
    }
}

#[test]
fn a_gemini_stream_without_sse_is_read_as_a_json_array() {
    let chunks = vec![
        br#"[{"candidates":[{"content":{"parts":[{"text":"h"}]}}]}"#.to_vec(),
        br#",
{"candidates":[{"content":{"parts":[{"text":"i"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":2}}]"#
            .to_vec(),
    ];
    let reply = MockReply::json(200, Vec::new()).with_body(MockBody::Chunks(chunks.clone()));
    let setup = Setup::new(Protocol::Gemini, vec![reply]);
    let (_, body) = request(Protocol::Gemini, true, MODEL);
    let got =
        setup.post(&format!("/v1beta/models/{MODEL}:streamGenerateContent"), body.to_string().into_bytes(), &auth(Protocol::Gemini, TOKEN));
    assert_eq!(got.body, chunks.concat());
    let record = &setup.recorder.wait(1)[0];
    assert_eq!((record.usage.input_tokens, record.usage.output_tokens), (10, 2));
    assert_eq!(record.response.as_ref().unwrap().text, "hi");
}
