//! The allow-list of methods and paths: every request the gateway serves matches exactly one
//! route of this table; anything else is refused with 404 (405 for a known path with another method).
//!
//! | method and path (as the sandbox calls them) | endpoint | upstream URL |
//! | --- | --- | --- |
//! | `POST /v1/chat/completions` | [`Endpoint::ChatCompletions`] | `{base}/chat/completions` |
//! | `POST /v1/responses` | [`Endpoint::Responses`] | `{base}/responses` |
//! | `POST /v1/responses/input_tokens` | [`Endpoint::ResponsesInputTokens`] | `{base}/responses/input_tokens` |
//! | `POST /v1/messages` | [`Endpoint::Messages`] | `{base}/v1/messages` |
//! | `POST /v1/messages/count_tokens` | [`Endpoint::MessagesCountTokens`] | `{base}/v1/messages/count_tokens` |
//! | `POST /{v1,v1beta}/models/{model}:generateContent` | [`Endpoint::GenerateContent`] | `{base}/{version}/models/{model}:generateContent` |
//! | `POST /{v1,v1beta}/models/{model}:streamGenerateContent` | [`Endpoint::StreamGenerateContent`] | same pattern |
//! | `POST /{v1,v1beta}/models/{model}:countTokens` | [`Endpoint::CountTokens`] | same pattern |
//! | `GET /v1/models`, `GET /v1beta/models` | [`Endpoint::ListModels`] | answered locally |
//! | `GET /v1/models/{model}`, `GET /v1beta/models/{model}` | [`Endpoint::GetModel`] | answered locally |
//!
//! `{base}` is the upstream's [`crate::Upstream::base_url`]. No file, batch, fine-tune, upload,
//! assistant, vector-store, stored-response or cache endpoint is on the list. `GET /v1/models`
//! answers in the shape of the protocol the request's credential header speaks (Gemini for
//! `x-goog-api-key` or `?key=`, Anthropic for `x-api-key` or `anthropic-version`, else OpenAI).

use serde::{Deserialize, Serialize};

use crate::config::Protocol;

/// What a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Endpoint {
    /// OpenAI chat completions.
    ChatCompletions,
    /// OpenAI Responses: create a response.
    Responses,
    /// OpenAI Responses: count the input's tokens.
    ResponsesInputTokens,
    /// Anthropic: create a message.
    Messages,
    /// Anthropic: count a message's tokens.
    MessagesCountTokens,
    /// Gemini: generate content.
    GenerateContent,
    /// Gemini: generate content, streamed.
    StreamGenerateContent,
    /// Gemini: count tokens.
    CountTokens,
    /// List the configured models (answered by the gateway).
    ListModels,
    /// Describe one configured model (answered by the gateway).
    GetModel,
}

impl Endpoint {
    /// Token counting: side requests by default, whose answers are counts, not usage.
    pub fn is_token_count(self) -> bool {
        matches!(self, Endpoint::ResponsesInputTokens | Endpoint::MessagesCountTokens | Endpoint::CountTokens)
    }

    /// Answered by the gateway itself, never forwarded.
    pub fn is_local(self) -> bool {
        matches!(self, Endpoint::ListModels | Endpoint::GetModel)
    }

    /// Generates a model response (the endpoints whose requests can be main-loop turns).
    pub fn generates(self) -> bool {
        matches!(
            self,
            Endpoint::ChatCompletions
                | Endpoint::Responses
                | Endpoint::Messages
                | Endpoint::GenerateContent
                | Endpoint::StreamGenerateContent
        )
    }

    /// The endpoint's name in journals and records (`chat_completions`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Endpoint::ChatCompletions => "chat_completions",
            Endpoint::Responses => "responses",
            Endpoint::ResponsesInputTokens => "responses_input_tokens",
            Endpoint::Messages => "messages",
            Endpoint::MessagesCountTokens => "messages_count_tokens",
            Endpoint::GenerateContent => "generate_content",
            Endpoint::StreamGenerateContent => "stream_generate_content",
            Endpoint::CountTokens => "count_tokens",
            Endpoint::ListModels => "list_models",
            Endpoint::GetModel => "get_model",
        }
    }
}

/// A matched request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Route {
    pub(crate) endpoint: Endpoint,
    /// The protocol whose upstream serves it (for local endpoints: whose shape answers).
    pub(crate) protocol: Protocol,
    /// The model named in the path (Gemini; `GET .../models/{model}`).
    pub(crate) path_model: Option<String>,
    /// What is appended to the upstream's base URL (before the query).
    pub(crate) upstream_suffix: String,
}

/// Why a request matches no route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NoRoute {
    /// No endpoint has this path.
    NotServed,
    /// The path is served, with another method.
    WrongMethod,
}

/// Credential hints that pick the shape of `GET /v1/models`.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ListingHints {
    pub(crate) gemini: bool,
    pub(crate) anthropic: bool,
}

/// The route of `method` and `path` (no query, exactly as received: no normalization, so
/// `..`, `//` and escapes match nothing).
pub(crate) fn route(method: &http::Method, path: &str, hints: ListingHints) -> Result<Route, NoRoute> {
    let post = method == http::Method::POST;
    let get = method == http::Method::GET;
    let fixed = |endpoint: Endpoint, protocol: Protocol, suffix: &str, want_post: bool| {
        if (want_post && post) || (!want_post && get) {
            Ok(Route { endpoint, protocol, path_model: None, upstream_suffix: suffix.to_string() })
        } else {
            Err(NoRoute::WrongMethod)
        }
    };
    match path {
        "/v1/chat/completions" => return fixed(Endpoint::ChatCompletions, Protocol::OpenaiChat, "/chat/completions", true),
        "/v1/responses" => return fixed(Endpoint::Responses, Protocol::OpenaiResponses, "/responses", true),
        "/v1/responses/input_tokens" => {
            return fixed(Endpoint::ResponsesInputTokens, Protocol::OpenaiResponses, "/responses/input_tokens", true);
        }
        "/v1/messages" => return fixed(Endpoint::Messages, Protocol::AnthropicMessages, "/v1/messages", true),
        "/v1/messages/count_tokens" => {
            return fixed(Endpoint::MessagesCountTokens, Protocol::AnthropicMessages, "/v1/messages/count_tokens", true);
        }
        "/v1/models" => {
            let protocol = if hints.gemini {
                Protocol::Gemini
            } else if hints.anthropic {
                Protocol::AnthropicMessages
            } else {
                Protocol::OpenaiChat
            };
            return fixed(Endpoint::ListModels, protocol, "", false);
        }
        "/v1beta/models" => return fixed(Endpoint::ListModels, Protocol::Gemini, "", false),
        _ => {}
    }
    let (version, rest) = if let Some(rest) = path.strip_prefix("/v1/models/") {
        ("v1", rest)
    } else if let Some(rest) = path.strip_prefix("/v1beta/models/") {
        ("v1beta", rest)
    } else {
        return Err(NoRoute::NotServed);
    };
    if rest.is_empty() {
        return Err(NoRoute::NotServed);
    }
    if get {
        // Answered locally from the configured names, so any name may be asked for
        // (`Qwen/Qwen3-32B`, `qwen3:32b`); nothing is forwarded.
        let protocol = if version == "v1beta" || hints.gemini {
            Protocol::Gemini
        } else if hints.anthropic {
            Protocol::AnthropicMessages
        } else {
            Protocol::OpenaiChat
        };
        return Ok(Route { endpoint: Endpoint::GetModel, protocol, path_model: Some(rest.to_string()), upstream_suffix: String::new() });
    }
    let Some((model, method_name)) = rest.rsplit_once(':') else {
        // `models/{model}` is served (GET); `models/a/b` is not, by any method.
        return Err(if rest.contains('/') { NoRoute::NotServed } else { NoRoute::WrongMethod });
    };
    let endpoint = match method_name {
        "generateContent" => Endpoint::GenerateContent,
        "streamGenerateContent" => Endpoint::StreamGenerateContent,
        "countTokens" => Endpoint::CountTokens,
        _ => return Err(NoRoute::NotServed),
    };
    if !post {
        return Err(NoRoute::WrongMethod);
    }
    if model.is_empty() || model.contains('/') {
        return Err(NoRoute::NotServed);
    }
    Ok(Route {
        endpoint,
        protocol: Protocol::Gemini,
        path_model: Some(model.to_string()),
        upstream_suffix: format!("/{version}/models/{model}:{method_name}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Method;

    fn endpoint(method: Method, path: &str) -> Result<Endpoint, NoRoute> {
        route(&method, path, ListingHints::default()).map(|r| r.endpoint)
    }

    #[test]
    fn only_the_listed_paths_route() {
        assert_eq!(endpoint(Method::POST, "/v1/chat/completions"), Ok(Endpoint::ChatCompletions));
        assert_eq!(endpoint(Method::GET, "/v1/chat/completions"), Err(NoRoute::WrongMethod));
        assert_eq!(endpoint(Method::POST, "/v1/messages/count_tokens"), Ok(Endpoint::MessagesCountTokens));
        for refused in [
            "/v1/files",
            "/v1/batches",
            "/v1/fine_tuning/jobs",
            "/v1/uploads",
            "/v1/messages/batches",
            "/v1/chat/completions/",
            "/v1//chat/completions",
            "/v1/chat/completions/../files",
            "/v1/responses/resp_1",
            "/v1beta/files",
            "/v1beta/cachedContents",
            "/v1beta/models/m:batchGenerateContent",
            "/v1beta/models/a/b:generateContent",
            "/upload/v1beta/files",
            "*",
        ] {
            assert_eq!(endpoint(Method::POST, refused), Err(NoRoute::NotServed), "{refused}");
        }
        let gemini = route(&Method::POST, "/v1beta/models/gemini-2.5-pro:streamGenerateContent", ListingHints::default()).unwrap();
        assert_eq!(gemini.path_model.as_deref(), Some("gemini-2.5-pro"));
        assert_eq!(gemini.upstream_suffix, "/v1beta/models/gemini-2.5-pro:streamGenerateContent");
        let listing = route(&Method::GET, "/v1/models", ListingHints { gemini: false, anthropic: true }).unwrap();
        assert_eq!((listing.endpoint, listing.protocol), (Endpoint::ListModels, Protocol::AnthropicMessages));
        let slashed = route(&Method::GET, "/v1/models/Qwen/Qwen3-32B", ListingHints::default()).unwrap();
        assert_eq!(slashed.path_model.as_deref(), Some("Qwen/Qwen3-32B"));
        assert_eq!(endpoint(Method::POST, "/v1/models/gpt-x"), Err(NoRoute::WrongMethod));
        let one = route(&Method::GET, "/v1/models/gpt-x", ListingHints::default()).unwrap();
        assert_eq!((one.endpoint, one.protocol, one.path_model.as_deref()), (Endpoint::GetModel, Protocol::OpenaiChat, Some("gpt-x")));
    }
}
